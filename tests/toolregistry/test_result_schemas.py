"""Each tool's result is generated from the type its ``execute`` returns, published in the served
OpenAPI schema and as the MCP ``outputSchema``, and every result the suite sees fits it with
exactly one branch wherever there are several."""
from __future__ import annotations

from itertools import combinations
from typing import Annotated, NotRequired, TypedDict

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from msgspec import Meta

from arkme.kernel.projections import NonNegative, one_of
from galleries.selectors import GalleryItemView
from tests.support.dsh import LEDGER
from tests.support.fakes import catalog_of, fake_module
from tests.support.mcp import Mcp, accept, value_of
from tests.support.results import (
    EXECUTE,
    GENERIC_EXECUTE,
    branch_problems,
    execute_response_schema,
    result_problems,
    served_schema,
)
from toolregistry.catalog import CATALOG
from toolregistry.catalog_checks import validate_catalog
from toolregistry.metadata import ToolDefinition
from toolregistry.result_schemas import NotAProjection, result_schema
from toolregistry.results import output_schema, result_type

REFS = "#/components/schemas/"


def _one_branch(schema: dict, result: dict) -> str:
    """The one branch of the operation's ``result`` oneOf that the result matches, by name."""
    components = served_schema()["components"]
    branches = components["schemas"][schema["$ref"].rsplit("/", 1)[1]]["properties"]["result"]
    branches = branches.get("oneOf") or components["schemas"][branches["$ref"].rsplit("/", 1)[1]].get("oneOf")
    matched = [branch["$ref"].removeprefix(REFS) for branch in branches
               if Draft202012Validator({**branch, "components": components}).is_valid(result)]
    assert len(matched) == 1, matched
    return matched[0]


def test_every_tool_over_rest_answers_what_the_served_schema_says(client, dsh, gs, world, refs, candidates):
    assert client.get("/dsh/v1/schema/?format=json").json() == served_schema()
    session = gs.session
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    gallery = gs.add_confirmed(gs.write_many(2))["gallery"]  # prepare and confirm
    operation = gs.prepare(source="workspace", workspace_paths=gs.write_many(1, start=7)).json()["result"]
    cancelled = gs.cancel(operation["operation"])
    assert cancelled.status_code == 200
    items = [item["item"] for item in gallery["items"]]
    extension, revision = gallery["extension"], gallery["revision"]
    reordered = dsh.approve_and_execute(session, "arkme_extension_preview_reorder",
                                        {"extension": extension, "order": items[::-1], "revision": revision})
    assert reordered.status_code == 200
    deleted = dsh.approve_and_execute(session, "arkme_extension_preview_delete",
                                      {"extension": extension, "items": items[:1], "revision": revision + 1})
    assert deleted.status_code == 200
    found = candidates("open-group")["candidates"]
    assert dsh.approve_and_execute(session, "arkme_group_member_add", {
        "source_ref": refs["open-group"], "candidate_refs": [found[0]["candidate_ref"], "not-a-ref"]}).status_code == 200
    assert dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).status_code == 200

    results = [(path, body) for path, body in LEDGER.bodies if EXECUTE.match(path) and "result" in body]
    assert {EXECUTE.match(path).group(1) for path, _ in results} == {m.METADATA.name for m in CATALOG.modules}
    assert [problem for path, body in results for problem in result_problems(path, body)] == []
    # The three results of one shape: one type through the execute operation, and each tool's
    # own type through its own operation.
    generic = execute_response_schema(GENERIC_EXECUTE)
    for response in (cancelled, reordered, deleted):
        assert _one_branch(generic, response.json()["result"]) == "GalleryResult"
    add = execute_response_schema("/dsh/v1/sessions/{session}/tools/arkme_extension_preview_add/execute")
    assert _one_branch(add, cancelled.json()["result"]) == "ToolResult_arkme_extension_preview_add_Cancelled"
    assert _one_branch(add, operation) == "ToolResult_arkme_extension_preview_add_Prepared"


def test_a_result_outside_its_schema_is_caught():
    path = "/dsh/v1/sessions/ses_x/tools/arkme_context/execute"
    assert result_problems(path, {"result": {"account": {}, "extensions": [], "groups": [], "extra": 1}})
    assert result_problems(path, {"error": {"code": "x"}}) == []


def test_a_result_that_matches_several_branches_is_caught():
    """What the schema once published: the delete, reorder and add results side by side, where
    a gallery result matches three."""
    several = {"oneOf": [{"$ref": f"{REFS}ToolResult_{name}"} for name in (
        "arkme_extension_preview_add", "arkme_extension_preview_delete", "arkme_extension_preview_reorder")]}
    gallery = {"gallery": {"extension": "ext_x", "revision": 1, "capacity": 20, "items": []}}
    assert branch_problems(several, gallery, with_components=True) == [
        f"result: 3 oneOf branches match {[branch['$ref'] for branch in several['oneOf']]}"]


def _closed(schema: dict) -> dict:
    components = served_schema()["components"]["schemas"]
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    assert schema["type"] == "object" and schema["additionalProperties"] is False, schema
    return schema


def _may_overlap(a: dict, b: dict) -> bool:
    """Two closed objects share an instance only if each one's required keys are keys the other allows."""
    return set(a["required"]) <= set(b["properties"]) and set(b["required"]) <= set(a["properties"])


def test_the_branches_of_every_result_are_disjoint():
    """Not only the results the suite happened to see: no result can match two branches."""
    components = served_schema()["components"]["schemas"]
    alternatives = [components["ExecuteResult"]["properties"]["result"]["oneOf"]]
    alternatives += [components[f"ToolResult_{m.METADATA.name}"].get("oneOf", []) for m in CATALOG.modules]
    for branches in alternatives:
        for first, second in combinations(branches, 2):
            assert not _may_overlap(_closed(first), _closed(second)), (first, second)


def test_a_client_that_takes_the_first_branch_that_fits_takes_the_right_one():
    """openapi-python-client parses a oneOf by trying its branches in order and ignores keys a
    model does not name: no branch may fit a result of a later one."""
    components = served_schema()["components"]["schemas"]
    alternatives = [components["ExecuteResult"]["properties"]["result"]["oneOf"]]
    alternatives += [components[f"ToolResult_{m.METADATA.name}"].get("oneOf", []) for m in CATALOG.modules]
    for branches in alternatives:
        for earlier, later in combinations([_closed(branch) for branch in branches], 2):
            assert not set(earlier["required"]) <= set(later["properties"]), (earlier, later)


def test_the_openapi_schema_publishes_each_tools_result_schema():
    components = served_schema()["components"]["schemas"]

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
        assert resolved(published) == output_schema(module.definition())
        own = served_schema()["paths"][f"/dsh/v1/sessions/{{session}}/tools/{module.METADATA.name}/execute"]["post"]
        assert own["operationId"] == f"tool_execute_{module.METADATA.name}"
        answered = resolved(own["responses"]["200"]["content"]["application/json"]["schema"])["properties"]["result"]
        answered.pop("description", None)
        assert answered == resolved(published)
    # A projection is one named type wherever a result holds one.
    assert components["ToolResult_arkme_extension_preview_delete"]["$ref"] == f"{REFS}GalleryResult"
    assert components["ToolResult_arkme_extension_preview_reorder"]["$ref"] == f"{REFS}GalleryResult"
    assert components["Gallery"]["properties"]["items"]["items"] == {"$ref": f"{REFS}GalleryItem"}
    shapes = [branch["$ref"].removeprefix(REFS) for branch in components["ExecuteResult"]["properties"]["result"]["oneOf"]]
    assert shapes == ["ToolResult_arkme_extension_preview_add_Prepared", "Candidates", "ContextResult",
                      "ToolResult_arkme_extension_preview_add_Confirmed", "AddMembers", "AccountResult", "GalleryResult"]


def test_each_output_schema_is_generated_from_the_type_execute_returns():
    for module in CATALOG.modules:
        definition = module.definition()
        assert definition.output_schema == {}, f"{definition.name} states a schema of its own"
        assert output_schema(definition) == result_schema(result_type(definition.execute))


class Item(TypedDict):
    item: str
    format: Annotated[str, one_of("png", "jpeg")]
    bytes: NonNegative
    note: NotRequired[str]


def test_a_projection_is_its_schema():
    assert result_schema(Item) == {"type": "object", "properties": {
        "item": {"type": "string"},
        "format": {"type": "string", "enum": ["png", "jpeg"]},
        "bytes": {"type": "integer", "minimum": 0},
        "note": {"type": "string"},
    }, "required": ["item", "format", "bytes"], "additionalProperties": False}


def test_a_projection_that_drifts_from_its_results_fails_the_check():
    """A field added to a projection is in its schema at once, so a result the projection no
    longer describes is caught, and so is a key the projection never had."""
    grown = TypedDict("grown", {**GalleryItemView.__annotations__, "thumbnail": str})  # type: ignore[misc]
    before = {"item": "itm_x", "position": 1, "width": 320, "height": 320, "format": "png", "bytes": 10}
    checker = Draft202012Validator(result_schema(GalleryItemView), format_checker=FormatChecker())
    assert checker.is_valid(before) and not checker.is_valid({**before, "thumbnail": "t"})
    assert not Draft202012Validator(result_schema(grown)).is_valid(before)


def test_a_tool_that_names_no_projection_fails_the_catalog_check():
    def execute(context, arguments) -> dict:
        return {}

    module = fake_module("arkme_untyped", output={})
    module.definition = lambda: ToolDefinition(name="arkme_untyped", description="Does a thing.",
                                               input_schema={"type": "object", "additionalProperties": False},
                                               execute=execute)
    problems = [problem for problem in validate_catalog(catalog_of([module])) if "arkme_untyped" in problem.message]
    assert [problem.id for problem in problems] == ["toolregistry.E015"]


def test_a_constraint_without_a_keyword_is_refused():
    class Odd(TypedDict):
        size: Annotated[int, Meta(multiple_of=2)]

    with pytest.raises(NotAProjection):
        result_schema(Odd)


def test_every_tool_over_mcp_returns_what_its_listed_output_schema_says(dsh, gs, world, refs):
    """The same flow through the MCP door, each success checked against the ``outputSchema``
    that ``tools/list`` published (not the catalog's copy)."""
    client = Mcp(dsh, gs.session)
    listed = {tool["name"]: tool["outputSchema"] for tool in client.tools()}
    yes = accept(approve=True)
    seen: dict[str, int] = {}

    def call(name, arguments, answer=yes):
        result = client.call_answering(name, arguments, answer)
        structured = value_of(result)
        checker = Draft202012Validator(listed[name], format_checker=FormatChecker())
        assert list(checker.iter_errors(structured)) == []
        assert branch_problems(listed[name], structured, with_components=False) == []
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
