"""Every result a tool returns must fit the schemas it is published with, and the suite checks
each one it sees: a REST result against the served OpenAPI schema (the execute operation's and
the tool's own execute operation's 200 response), where every ``oneOf`` or ``anyOf`` met must
match exactly one branch; an MCP result against the tool's ``outputSchema``."""
from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

EXECUTE = re.compile(r"^/dsh/v1/sessions/[^/]+/tools/([a-z0-9_]+)/execute$")
MCP_CALL = re.compile(r"^/dsh/v1/sessions/[^/]+/mcp#([a-z0-9_]+)$")
GENERIC_EXECUTE = "/dsh/v1/sessions/{session}/tools/{name}/execute"


@cache
def served_schema() -> dict[str, Any]:
    """The OpenAPI document as ``GET /dsh/v1/schema/`` serves it (built once per test run)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(schema, renderer_context={}))


def execute_response_schema(path_template: str) -> dict[str, Any]:
    operation = served_schema()["paths"][path_template]["post"]
    return operation["responses"]["200"]["content"]["application/json"]["schema"]


@cache
def _validator(schema_json: str, with_components: bool) -> Draft202012Validator:
    schema = json.loads(schema_json)
    if with_components:  # "#/components/schemas/…" resolves inside the served document's components
        schema = {**schema, "components": served_schema()["components"]}
    return Draft202012Validator(schema, format_checker=FormatChecker())


def _validator_of(schema: Any, with_components: bool) -> Draft202012Validator:
    return _validator(json.dumps(schema, sort_keys=True), with_components)


def _resolved(schema: Any, with_components: bool) -> Any:
    while with_components and isinstance(schema, dict) and "$ref" in schema:
        schema = served_schema()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def branch_problems(schema: Any, instance: Any, *, with_components: bool, where: str = "result") -> list[str]:
    """Where a ``oneOf`` or ``anyOf`` that the instance meets matches no branch or several: a
    client that picks a type by the first branch that fits would pick wrong."""
    schema = _resolved(schema, with_components)
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    for keyword in ("oneOf", "anyOf"):
        if keyword in schema:
            matched = [branch for branch in schema[keyword] if _validator_of(branch, with_components).is_valid(instance)]
            if len(matched) != 1:
                names = [branch.get("$ref", branch.get("title", "?")) for branch in matched]
                problems.append(f"{where}: {len(matched)} {keyword} branches match {names}")
            for branch in matched[:1]:
                problems += branch_problems(branch, instance, with_components=with_components, where=where)
    if isinstance(instance, dict):
        for key, value in instance.items():
            if key in schema.get("properties", {}):
                problems += branch_problems(schema["properties"][key], value, with_components=with_components,
                                            where=f"{where}/{key}")
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for index, value in enumerate(instance):
            problems += branch_problems(schema["items"], value, with_components=with_components,
                                        where=f"{where}/{index}")
    return problems


def schema_problems(schema: Any, instance: Any, *, with_components: bool) -> list[str]:
    errors = [f"{'/'.join(map(str, error.absolute_path)) or 'body'}: {error.message[:200]}"
              for error in _validator_of(schema, with_components).iter_errors(instance)]
    return errors or branch_problems(schema, instance, with_components=with_components, where="body")


@cache
def _catalog_names() -> frozenset[str]:
    from toolregistry.catalog import CATALOG

    return frozenset(module.METADATA.name for module in CATALOG.modules)


@cache
def output_schema_of(name: str) -> dict[str, Any]:
    from toolregistry.catalog import CATALOG
    from toolregistry.results import output_schema

    module = next(module for module in CATALOG.modules if module.METADATA.name == name)
    return dict(output_schema(module.definition()))


def result_problems(path: str, body: Any) -> list[str]:
    if not isinstance(body, dict) or not isinstance(body.get("result"), dict):
        return []
    if (match := EXECUTE.match(path)) and match.group(1) in _catalog_names():
        name = match.group(1)
        return [f"{operation}: {problem}"
                for operation in (GENERIC_EXECUTE, f"/dsh/v1/sessions/{{session}}/tools/{name}/execute")
                for problem in schema_problems(execute_response_schema(operation), body, with_components=True)]
    if (match := MCP_CALL.match(path)) and match.group(1) in _catalog_names() and body["result"].get("isError") is False:
        structured = body["result"].get("structuredContent")
        return schema_problems(output_schema_of(match.group(1)), structured, with_components=False)
    return []
