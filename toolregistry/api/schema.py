"""drf-spectacular post-processing: every tool's input schema, and the contract's additions."""
from __future__ import annotations

import copy
import json
from typing import Any

from ..catalog import CATALOG
from ..result_schemas import SHARED


def _key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True)


def _with_refs(schema: Any, named: dict[str, str]) -> Any:
    """The schema with every sub-schema that has a component name replaced by its $ref, so a
    client generator makes one type of each (a Gallery is a Gallery in every result)."""
    if isinstance(schema, dict):
        return {key: _ref_or(value, named) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_ref_or(value, named) for value in schema]
    return schema


def _ref_or(value: Any, named: dict[str, str]) -> Any:
    if isinstance(value, dict) and (name := named.get(_key(value))):
        return {"$ref": f"#/components/schemas/{name}"}
    return _with_refs(value, named)


def add_tool_schemas(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    named = {_key(schema): name for name, schema in SHARED.items()}
    for name, schema in SHARED.items():
        components[name] = _with_refs(copy.deepcopy(schema), {k: v for k, v in named.items() if v != name})
    refs, results = [], []
    for module in CATALOG.modules:
        definition = module.definition()
        result_component = f"ToolResult_{definition.name}"
        output = copy.deepcopy(dict(definition.output_schema))
        variants = output.get("oneOf", [])
        for variant in variants:  # each alternative a type of its own, named by its title
            if isinstance(variant, dict) and variant.get("title") and _key(variant) not in named:
                variant_name = f"{result_component}_{variant['title']}"
                components[variant_name] = _with_refs(variant, named)
                named[_key(variant)] = variant_name
        components[result_component] = {
            **_ref_or(output, {k: v for k, v in named.items() if v != result_component}),
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
        "POST sessions/{s}/mcp is the session's Model Context Protocol endpoint (JSON-RPC, documented "
        "below and in README 'The MCP surface'); its outputSchema for a tool is ToolResult_<name> or "
        "the error envelope.",
        "approval_declined (403): over MCP, the human declined the approval elicitation; nothing ran.",
        "The audit records the surface (rest or mcp) of every tool call.",
        "A JSON body is JSON as RFC 8259 defines it: NaN, Infinity and numbers beyond a double's range "
        "are 400 malformed_request.",
        "An object in a JSON body names each key once (I-JSON, RFC 7493): decoders differ on which of "
        "two values wins, and an approval is bound to the exact arguments; a repeated key is 400 "
        "malformed_request (over MCP, a JSON-RPC parse error).",
        "A request field typed string (account, profile, workspace, a message's id and text, approval) "
        "takes only a JSON string: a number is 400 invalid_request naming the field, not read as its text.",
        "What is refused before any view runs also carries the envelope under /dsh/ (a Host header the "
        "service does not serve: 400 invalid_request); on an MCP endpoint it is a JSON-RPC error, and a "
        "body over 1 MiB there is 413 with the JSON-RPC error -32600.",
        "arkme_id_change: pre-execute denies an ill-formed ID with the error execute gives (invalid_arkme_id, "
        "fields [arkme_id]), so no human is asked to approve an ID the call would refuse; over MCP the call "
        "is that tool error, with no elicitation.",
        "If-None-Match on GET sessions/{s} compares entity tags weakly (W/\"r\" matches \"r\"), and * "
        "matches any current view.",
        "An integral number is that integer wherever a tool takes one (JSON Schema's integer accepts "
        "2.0); an approval binds the number, not how it was written.",
        "A request body may come with Content-Length or in chunks (Transfer-Encoding: chunked) where "
        "the server decodes chunks, as gunicorn does in production (not Django's development server); "
        "the limits are the same.",
    ]
    result.setdefault("paths", {})[MCP_PATH] = _mcp_path()
    _message_body_alternatives(result)
    return result


def _message_body_alternatives(result: dict[str, Any]) -> None:
    """``POST …/messages`` takes one of two bodies (JSON, or multipart with files). Client
    generators type a body with several content types as optional (openapi-python-client's
    ``body: A | B | Unset``), so the schema says so too, and the description says what the
    server requires: a body without an ``id`` is a 400."""
    operation = result.get("paths", {}).get("/dsh/v1/sessions/{session}/messages", {}).get("post")
    body = operation.get("requestBody") if operation else None
    if body and len(body.get("content", {})) > 1:
        body["required"] = False
        body["description"] = ("One of two bodies: JSON (MessageText) or multipart/form-data with files "
                               "(MessageRequest). Either must carry an id; without one the answer is 400.")


MCP_PATH = "/dsh/v1/sessions/{session}/mcp"


def _mcp_path() -> dict[str, Any]:
    """The MCP endpoint, described for OpenAPI readers. Its body is JSON-RPC 2.0 as the MCP
    specification defines it (versions 2026-07-28, 2025-11-25, 2025-06-18), not a REST schema."""
    message = {"type": "object", "required": ["jsonrpc", "method"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]}, "method": {"type": "string"},
        "params": {"type": "object"}}}
    envelope = {"$ref": "#/components/schemas/ErrorEnvelope"}
    rpc_error = {"type": "object", "required": ["jsonrpc", "error"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer", "null"]},
        "error": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "integer"}, "message": {"type": "string"}, "data": envelope}}}}
    return {"post": {
        "operationId": "session_mcp",
        "summary": "The session as a Model Context Protocol server (Streamable HTTP, JSON responses)",
        "description": (
            "Methods: server/discover (2026-07-28), initialize and ping (2025-11-25, 2025-06-18, served "
            "statelessly), tools/list (the session view's tools with title, outputSchema and annotations) "
            "and tools/call (the same pipeline as execute). Pre-execute approvals are form elicitations on "
            "2026-07-28 and `_meta[\"io.arkme/approval\"]` (from pre-execute) before it. An "
            "`Idempotency-Key` header applies to a tools/call. GET and DELETE are 405; a foreign Origin is 403."
        ),
        "tags": ["mcp"],
        "parameters": [
            {"name": "session", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": "MCP-Protocol-Version", "in": "header", "required": False, "schema": {"type": "string"}},
            {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}},
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": message}}},
        "responses": {
            "200": {"description": "A JSON-RPC response (a result or a JSON-RPC error).",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
            "202": {"description": "A notification, accepted."},
            "400": {"description": "A malformed message or missing 2026-07-28 headers (a JSON-RPC error)."},
            "401": {"description": "Missing or invalid client key.",
                    "content": {"application/json": {"schema": envelope}}},
            "403": {"description": "An Origin that is not an allowed host."},
            "404": {"description": "Unknown, closed or another client's session: a JSON-RPC error "
                                   "(-32600, \"Session not found\") whose data is the REST error envelope.",
                    "content": {"application/json": {"schema": rpc_error}}},
            "405": {"description": "Any method but POST."},
            "503": {"description": "A dependency (the database) is unavailable before the call could run; "
                                   "safe to retry (Retry-After).",
                    "content": {"application/json": {"schema": envelope}}},
        },
        "security": [{"dshClientKey": []}],
    }}
