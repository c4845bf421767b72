"""Each tool's result fits its output schema; the OpenAPI schema publishes the same schemas."""
from __future__ import annotations

from tests.support.dsh import LEDGER
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
    for module in CATALOG.modules:
        published = dict(components[f"ToolResult_{module.METADATA.name}"])
        published.pop("description")
        assert published == module.definition().output_schema
    refs = components["ExecuteResult"]["properties"]["result"]["oneOf"]
    assert len(refs) == len(CATALOG.modules)
