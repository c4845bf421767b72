"""drf-spectacular post-processing: every tool's arguments and result, one execute operation
per tool, and the contract's additions.

A tool's result has a schema of its own, generated from the typed projection its ``execute``
returns (``toolregistry.results``), and each projection is one named component. Several tools
answer the same shape (delete, reorder and an add's cancel all answer ``{"gallery"}``), so the
body alone cannot say which tool answered, and the body carries no field that could (the wire
stays as the contract writes it). Two ways to read a result follow:

- ``POST …/tools/{name}/execute`` answers one of the distinct result shapes: each is closed
  and requires its own keys, so a result matches exactly one (the suite checks every result it
  sees), and a shared shape is one type (a reorder's result is a ``GalleryResult``).
- ``POST …/tools/<tool>/execute``, one operation per tool (the same route with the name
  fixed), answers that tool's own result type, so a generated client parses a reorder result
  as the reorder's type and a cancelled add as ``Cancelled``.
"""
from __future__ import annotations

import copy
from typing import Any

from ..catalog import CATALOG
from ..metadata import Approval, ToolModule
from ..result_schemas import Schema, projection_of, projection_schema, result_schema, title_of, union_members
from ..results import result_type

EXECUTE_PATH = "/dsh/v1/sessions/{session}/tools/{name}/execute"
COMPONENTS = "#/components/schemas/"

CONTRACT_ADDITIONS = [
    "GET catalog lists profiles as objects {name, kinds}.",
    "POST sessions/{s}/messages answers 201 {id, attachments}.",
    "A pre-execute 'ask' also carries expires_at.",
    "Arkme IDs are compared and stored in lower case.",
    "An Idempotency-Key still in use by a running call is 409 idempotency_in_progress after 10 s.",
    "Each tool's result has a JSON Schema (ToolResult_<name>), also in `arkme_catalog export --json`.",
    "Each tool also has an execute operation of its own, POST sessions/{s}/tools/<name>/execute "
    "(operationId tool_execute_<name>): the same route, described with that tool's arguments and result.",
    "arkme_group_member_candidates also answers scope: recent (no query: the recent chats were searched) "
    "or all (a query: every chat was).",
    "error.code is an enum: the registry of every code the service answers with (ErrorCodeEnum).",
    "POST sessions/{s}/mcp is the session's Model Context Protocol endpoint (JSON-RPC, documented "
    "below and in README 'The MCP surface'); its outputSchema for a tool is ToolResult_<name> or "
    "the error envelope.",
    "approval_declined (403): over MCP, the human declined the approval elicitation; nothing ran.",
    "Over MCP 2025-11-25 and 2025-06-18, a tools/call that needs the human, from a client that accepts "
    "text/event-stream, is answered as an SSE stream with one elicitation/create request and then the "
    "call's result; the client's JSON-RPC response POSTed to the endpoint is 202, or 400 when no question "
    "of this client in this session waits for it.",
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
    "Limits on tool calls (ARKME_RATE_LIMITS) are checked after the tool's visibility and arguments and "
    "before an approval is used (a repeat of a completed Idempotency-Key is answered and not counted): a "
    "throttled call (429, or over MCP the tool error throttled with the same details) writes nothing but its "
    "audit row and leaves its key free. pre-execute of a call past its limits answers deny with that error, "
    "and over MCP such a call is refused before the human is asked to approve or confirm it. When the "
    "limits' store cannot be reached, a write is 503 dependency_unavailable and a read runs.",
    "A W3C traceparent (and tracestate) header on any DSH request, or in an MCP request's params._meta "
    "(read first), continues the caller's trace; a malformed one is ignored.",
    "GET sessions/{s}/approvals/{approval}: an unknown approval, or another session's, is 404 "
    "unknown_approval; the approval page's address is on ARKME_PUBLIC_URL when set.",
    "Over MCP, a call whose approval is taken on Arkme's page and whose client cannot open a URL is the tool "
    "error approval_page_required; its details carry the page's address (url) and reason page_required, the "
    "only details that carry an address. Declining the URL question declines the approval.",
]

_APPROVAL_TEXT = {
    Approval.NONE: "It needs no approval.",
    Approval.PRE_EXECUTE: (
        "It needs the human's approval of these exact arguments: call pre-execute with them, show the "
        "card, and send the `approval` it gave here; without a valid one the answer is 403 "
        "`approval_required`. Where its approvals are taken on Arkme's page (`approval_url` in the ask), "
        "an approval the account has not approved there yet is 403 `approval_pending`, a declined one 403 "
        "`approval_declined`."),
    Approval.CONVERSATION: (
        "It is confirmed in the conversation: `prepare` answers a question to show the human, and "
        "`confirm` runs only once the latest message recorded (POST messages) is 确认."),
}


class Projections:
    """Names each typed projection once, as a component, the first time a schema refers to it
    (``GalleryView`` is ``Gallery``: the ``View`` of a Python name is no part of the type)."""

    def __init__(self, components: dict[str, Any]) -> None:
        self.components = components
        self.named: dict[str, type] = {}

    def ref(self, projection: type) -> str:
        name = projection.__name__.removesuffix("View")
        if self.named.setdefault(name, projection) is not projection:
            raise ValueError(f"two projections would be the component {name}: {projection!r}")
        if name not in self.components:
            self.components[name] = {}  # taken, before its body refers to what it holds
            self.components[name] = projection_schema(projection, ref=self.ref, inline=True)
        return COMPONENTS + name


def add_tool_schemas(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    projections = Projections(components)
    shapes: dict[type, tuple[str, bool]] = {}  # each distinct result shape: its $ref, and whether titled
    for module in CATALOG.modules:
        _add_arguments(components, module)
        _add_result(components, projections, module, shapes)
    for name in ("ArgumentsRequestRequest", "ExecuteRequestRequest"):
        body = components.get(name)
        if body and "arguments" in body.get("properties", {}):
            body["properties"]["arguments"] = {
                "description": "The tool's arguments: the ToolArguments_<name> schema of the tool the path names.",
                "oneOf": [{"$ref": f"{COMPONENTS}ToolArguments_{m.METADATA.name}"} for m in CATALOG.modules],
            }
    executed = components.get("ExecuteResult")
    if executed and "result" in executed.get("properties", {}):
        executed["properties"]["result"] = {
            "description": "The tool's result: exactly one of these shapes matches it. Which tool answered is "
                           "the path's; each tool's own type is its ToolResult_<name>, and its own operation "
                           "tool_execute_<name> answers that type.",
            "oneOf": [{"$ref": shapes[projection][0]} for projection in _widest_first(shapes)],
        }
    paths = result.setdefault("paths", {})
    if EXECUTE_PATH in paths:
        for module in CATALOG.modules:
            _add_execute_operation(paths, components, module)
    result.setdefault("info", {})["x-contract-additions"] = CONTRACT_ADDITIONS
    paths[MCP_PATH] = _mcp_path()
    _message_body_alternatives(result)
    return result


def _add_arguments(components: dict[str, Any], module: ToolModule) -> None:
    definition = module.definition()
    schema = copy.deepcopy(dict(definition.input_schema))
    schema["description"] = f"Arguments of {definition.name} ({module.METADATA.id})."
    components[f"ToolArguments_{definition.name}"] = schema


def _add_result(components: dict[str, Any], projections: Projections, module: ToolModule,
                shapes: dict[type, tuple[str, bool]]) -> None:
    """``ToolResult_<name>``: the projection's component, or (a result per action) one titled
    component per action, ``ToolResult_<name>_<title>``."""
    name = module.METADATA.name
    returned = result_type(module.definition().execute)

    def branch(member: Any) -> Schema:
        component = f"ToolResult_{name}_{title_of(member)}"
        components[component] = projection_schema(member, ref=projections.ref, inline=True)
        _seen(shapes, projection_of(member), COMPONENTS + component, titled=True)
        return {"$ref": COMPONENTS + component}

    if len(union_members(returned)) == 1:
        schema: Schema = {"$ref": projections.ref(projection_of(returned))}
        _seen(shapes, projection_of(returned), schema["$ref"], titled=False)
    else:
        schema = result_schema(returned, ref=projections.ref, branch=branch)
    components[f"ToolResult_{name}"] = {
        **schema, "description": f"What {name} ({module.METADATA.id}) returns as result."}


def _seen(shapes: dict[type, tuple[str, bool]], projection: type, ref: str, *, titled: bool) -> None:
    """One entry per shape: a tool that answers the projection itself names it better than an
    action's titled copy of it (a cancelled add answers what a delete answers)."""
    if projection not in shapes or (shapes[projection][1] and not titled):
        shapes[projection] = (ref, titled)


def _widest_first(shapes: dict[type, tuple[str, bool]]) -> list[type]:
    """The shapes, those that require more keys first (stable). A client generated from the
    schema may take the first branch whose required keys a result has (openapi-python-client
    does), so a shape whose keys another one holds too ({"gallery"}, in a confirm's result)
    comes after it."""
    return sorted(shapes, key=lambda projection: -len(projection_schema(projection, inline=True)["required"]))


def _add_execute_operation(paths: dict[str, Any], components: dict[str, Any], module: ToolModule) -> None:
    meta = module.METADATA
    name = meta.name
    operation = copy.deepcopy(paths[EXECUTE_PATH]["post"])
    operation["operationId"] = f"tool_execute_{name}"
    operation["summary"] = f"Run {name}: {meta.title or name}"
    operation["description"] = (
        f"Runs {name} ({meta.id}): `POST sessions/{{session}}/tools/{{name}}/execute` with this name, described "
        f"with this tool's own arguments and result type. {_APPROVAL_TEXT[meta.approval]}\n\n"
        f"What the model is told about it: {module.definition().description}")
    operation["parameters"] = [p for p in operation.get("parameters", []) if p.get("name") != "name"]
    request_body = copy.deepcopy(components["ExecuteRequestRequest"])
    request_body["properties"]["arguments"] = {"$ref": f"{COMPONENTS}ToolArguments_{name}"}
    components[f"ExecuteRequest_{name}"] = request_body
    operation["requestBody"] = {"required": True, "content": {
        "application/json": {"schema": {"$ref": f"{COMPONENTS}ExecuteRequest_{name}"}}}}
    components[f"ExecuteResult_{name}"] = {
        "type": "object", "properties": {"result": {"$ref": f"{COMPONENTS}ToolResult_{name}"}},
        "required": ["result"]}
    operation["responses"]["200"] = {"description": f"{name} ran; its result.", "content": {
        "application/json": {"schema": {"$ref": f"{COMPONENTS}ExecuteResult_{name}"}}}}
    paths[f"/dsh/v1/sessions/{{session}}/tools/{name}/execute"] = {"post": operation}


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


_MCP_DESCRIPTION = (
    "Methods: server/discover (2026-07-28), initialize and ping (2025-11-25, 2025-06-18, served "
    "statelessly), tools/list (the session view's tools with title, outputSchema and annotations) "
    "and tools/call (the same pipeline as execute; past a limit, the tool error `throttled` with "
    "`details.retry_after_seconds`). Pre-execute approvals are form elicitations on "
    "2026-07-28. On 2025-11-25 and 2025-06-18 they come from `_meta[\"io.arkme/approval\"]` (from "
    "pre-execute), or, for a client that accepts text/event-stream, the server asks itself: the "
    "tools/call is answered as an SSE stream carrying one elicitation/create request (the approval "
    "card, or the question before a gallery add's confirm), and ends with the call's result once the "
    "client POSTed its JSON-RPC response here (202; 400 when no question waits for it). Tools whose "
    "approvals are taken on Arkme's page send the human there: a URL-mode elicitation to the page "
    "(2026-07-28 with the url capability; 2025-11-25 on the stream, which then waits for the page and "
    "sends notifications/elicitation/complete), otherwise the tool error approval_page_required with "
    "details.url, after which the same call runs once the account approved. An "
    "`Idempotency-Key` header applies to a tools/call. GET and DELETE are 405; a foreign Origin is 403."
)


def _mcp_path() -> dict[str, Any]:
    """The MCP endpoint, described for OpenAPI readers. Its body is JSON-RPC 2.0 as the MCP
    specification defines it (versions 2026-07-28, 2025-11-25, 2025-06-18), not a REST schema."""
    message = {"type": "object", "required": ["jsonrpc", "method"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]}, "method": {"type": "string"},
        "params": {"type": "object"}}}
    # A 2025-era client's answer to a question the server asked on a call's stream.
    answer = {"type": "object", "required": ["jsonrpc", "id"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": "string"}, "result": {"type": "object"},
        "error": {"type": "object"}}}
    envelope = {"$ref": "#/components/schemas/ErrorEnvelope"}
    rpc_error = {"type": "object", "required": ["jsonrpc", "error"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer", "null"]},
        "error": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "integer"}, "message": {"type": "string"}, "data": envelope}}}}
    return {"post": {
        "operationId": "session_mcp",
        "summary": "The session as a Model Context Protocol server (Streamable HTTP, JSON responses)",
        "description": _MCP_DESCRIPTION,
        "tags": ["mcp"],
        "parameters": [
            {"name": "session", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": "MCP-Protocol-Version", "in": "header", "required": False, "schema": {"type": "string"}},
            {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}},
            {"name": "traceparent", "in": "header", "required": False, "schema": {"type": "string"},
             "description": "W3C Trace Context; params._meta.traceparent, when present, is read instead."},
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": [
            message, answer]}}}},
        "responses": {
            "200": {"description": "A JSON-RPC response (a result or a JSON-RPC error).",
                    "content": {"application/json": {"schema": {"type": "object"}},
                                "text/event-stream": {"schema": {"type": "string"}}}},
            "202": {"description": "A notification, or the answer to a question asked on a call's stream, accepted."},
            "400": {"description": "A malformed message, missing 2026-07-28 headers, or an answer no question "
                                   "waits for (a JSON-RPC error)."},
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
