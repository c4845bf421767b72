"""drf-spectacular post-processing: every tool's input schema, and the contract's additions."""
from __future__ import annotations

import copy
from typing import Any

from ..catalog import CATALOG


def add_tool_schemas(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    refs, results = [], []
    for module in CATALOG.modules:
        definition = module.definition()
        result_component = f"ToolResult_{definition.name}"
        components[result_component] = {
            **copy.deepcopy(dict(definition.output_schema)),
            "description": f"What {definition.name} ({module.METADATA.id}) returns as result.",
        }
        results.append({"$ref": f"#/components/schemas/{result_component}"})
        component = f"ToolArguments_{definition.name}"
        schema = copy.deepcopy(dict(definition.input_schema))
        schema["description"] = f"Arguments of {definition.name} ({module.METADATA.id})."
        components[component] = schema
        refs.append({"$ref": f"#/components/schemas/{component}"})
    for name in ("ArgumentsRequestRequest", "ExecuteRequestRequest"):
        body = components.get(name)
        if body and "arguments" in body.get("properties", {}):
            body["properties"]["arguments"] = {
                "description": "The tool's arguments: one of the ToolArguments_* schemas, by tool name.",
                "oneOf": refs,
            }
    executed = components.get("ExecuteResult")
    if executed and "result" in executed.get("properties", {}):
        executed["properties"]["result"] = {
            "description": "The tool's result: one of the ToolResult_* schemas, by tool name.", "oneOf": results,
        }
    result.setdefault("info", {})["x-contract-additions"] = [
        "GET catalog lists profiles as objects {name, kinds}.",
        "POST sessions/{s}/messages answers 201 {id, attachments}.",
        "A pre-execute 'ask' also carries expires_at.",
        "Arkme IDs are compared and stored in lower case.",
        "An Idempotency-Key still in use by a running call is 409 idempotency_in_progress after 10 s.",
        "Each tool's result has a JSON Schema (ToolResult_<name>), also in `arkme_catalog export --json`.",
        "error.code is an enum: the registry of every code the service answers with (ErrorCodeEnum).",
    ]
    return result
