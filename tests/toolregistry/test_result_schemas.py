"""Each tool's result fits its output schema; the OpenAPI schema publishes the same schemas."""
from __future__ import annotations

from jsonschema import Draft202012Validator, FormatChecker

from tests.support.dsh import LEDGER
from tests.support.mcp import Mcp, accept, value_of
from tests.support.results import EXECUTE, result_problems
from toolregistry.catalog import CATALOG


def test_every_tool_returns_what_its_schema_says(dsh, gs, world, refs, candidates):
    session = gs.session
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    gallery = gs.add_confirmed(gs.write_many(2))["gallery"]  # prepare and confirm
    operation = gs.prepare(source="workspace", workspace_paths=gs.write_many(1, start=7)).json()["result"]
    assert gs.cancel(operation["operation"]).status_code == 200
    items = [item["item"] for item in gallery["items"]]
    extension, revision = gallery["extension"], gallery["revision"]
    assert dsh.approve_and_execute(session, "arkme_extension_preview_reorder",
                                   {"extension": extension, "order": items[::-1], "revision": revision}
                                   ).status_code == 200
    assert dsh.approve_and_execute(session, "arkme_extension_preview_delete",
                                   {"extension": extension, "items": items[:1], "revision": revision + 1}
                                   ).status_code == 200
    found = candidates("open-group")["candidates"]
    assert dsh.approve_and_execute(session, "arkme_group_member_add", {
        "source_ref": refs["open-group"], "candidate_refs": [found[0]["candidate_ref"], "not-a-ref"]}).status_code == 200
    assert dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).status_code == 200
    results = [(path, body) for path, body in LEDGER.bodies if EXECUTE.match(path) and "result" in body]
    assert {EXECUTE.match(path).group(1) for path, _ in results} == {m.METADATA.name for m in CATALOG.modules}
    assert [problem for path, body in results for problem in result_problems(path, body)] == []


def test_a_result_outside_its_schema_is_caught():
    path = "/dsh/v1/sessions/ses_x/tools/arkme_context/execute"
    assert result_problems(path, {"result": {"account": {}, "extensions": [], "groups": [], "extra": 1}})
    assert result_problems(path, {"error": {"code": "x"}}) == []


def test_the_openapi_schema_publishes_each_tools_result_schema(client):
    schema = client.get("/dsh/v1/schema/?format=json").json()
    components = schema["components"]["schemas"]

    def resolved(schema):
        """The schema with every $ref to a component replaced by the component itself."""
        if isinstance(schema, dict):
            if "$ref" in schema:
                rest = {key: value for key, value in schema.items() if key not in ("$ref", "description")}
                return {**resolved(components[schema["$ref"].rsplit("/", 1)[1]]), **resolved(rest)}
            return {key: resolved(value) for key, value in schema.items()}
        if isinstance(schema, list):
            return [resolved(value) for value in schema]
        return schema

    for module in CATALOG.modules:
        published = dict(components[f"ToolResult_{module.METADATA.name}"])
        published.pop("description")
        assert resolved(published) == module.definition().output_schema
    # A gallery is one named type wherever a result holds one.
    assert components["ToolResult_arkme_extension_preview_delete"]["$ref"] == "#/components/schemas/GalleryResult"
    assert components["Gallery"]["properties"]["items"]["items"] == {"$ref": "#/components/schemas/GalleryItem"}
    refs = components["ExecuteResult"]["properties"]["result"]["oneOf"]
    assert len(refs) == len(CATALOG.modules)


def test_every_tool_over_mcp_returns_what_its_listed_output_schema_says(dsh, gs, world, refs):
    """The same flow through the MCP door, each success checked against the ``outputSchema``
    that ``tools/list`` published (not the catalog's copy)."""
    client = Mcp(dsh, gs.session)
    listed = {tool["name"]: Draft202012Validator(tool["outputSchema"], format_checker=FormatChecker())
              for tool in client.tools()}
    yes = accept(approve=True)
    seen: dict[str, int] = {}

    def call(name, arguments, answer=yes):
        result = client.call_answering(name, arguments, answer)
        structured = value_of(result)
        assert list(listed[name].iter_errors(structured)) == []
        seen[name] = seen.get(name, 0) + 1
        return structured

    call("arkme_context", {})
    add = {"extension": gs.extension}
    prepared = call("arkme_extension_preview_add", {**add, "action": "prepare", "source": "workspace",
                                                    "workspace_paths": gs.write_many(2)})
    gallery = call("arkme_extension_preview_add", {**add, "action": "confirm", "operation": prepared["operation"]},
                   accept(reply="确认"))["gallery"]
    again = call("arkme_extension_preview_add", {**add, "action": "prepare", "source": "workspace",
                                                 "workspace_paths": gs.write_many(1, start=7)})
    call("arkme_extension_preview_add", {**add, "action": "cancel", "operation": again["operation"]})
    items = [item["item"] for item in gallery["items"]]
    call("arkme_extension_preview_reorder", {**add, "order": items[::-1], "revision": gallery["revision"]})
    call("arkme_extension_preview_delete", {**add, "items": items[:1], "revision": gallery["revision"] + 1})
    found = call("arkme_group_member_candidates", {"source_ref": refs["open-group"]})["candidates"]
    call("arkme_group_member_add", {"source_ref": refs["open-group"], "candidate_refs": [found[0]["candidate_ref"]]})
    call("arkme_id_change", {"arkme_id": "alice_2026"})
    assert set(seen) == {m.METADATA.name for m in CATALOG.modules}


def test_an_mcp_result_outside_its_schema_is_caught():
    path = "/dsh/v1/sessions/ses_x/mcp#arkme_context"
    bad = {"isError": False, "structuredContent": {"account": {}, "extensions": [], "groups": [], "extra": 1}}
    assert result_problems(path, {"result": bad})
    assert result_problems(path, {"result": {**bad, "isError": True}}) == []
