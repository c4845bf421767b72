"""One django-mcpz server per compiled toolset, whose tools are doors into the pipeline.

A tool function translates an MCP ``tools/call`` into the pipeline's ``Call`` (the tool,
the exchange's client and session, the ``Idempotency-Key``, the approval presented in
``_meta``, asked for by form, or given on Arkme's page), and the pipeline's ``CallResult`` back: the result, or the
refusal as a tool error carrying the REST envelope in ``structuredContent``.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django_mcpz.server import META_CLIENT_CAPABILITIES, MCPServer, ToolError

from arkme.kernel.errors import ArkmeError, ErrorCode
from arkme.kernel.outages import DATABASE_ERRORS, outage_error, outage_summary

from ..api.idempotency_key import idempotency_key_of
from ..approval_page import approval_page_required
from ..calls import Call
from ..execution import CallResult, tool_execute, tool_replay, tool_throttled
from ..models import Surface
from ..page_questions import approval_on_page
from ..questions import approval_by_question, confirmation_by_question
from ..registrar import CompiledTool, Toolset
from ..standing_grants import standing_grant_covering
from .asking import ElicitationAsker, StreamAsker
from .exchange import SUPPORTED_VERSIONS, Exchange, current_exchange

logger = logging.getLogger(__name__)

SERVER_NAME = "arkme-tool-registry"
SERVER_VERSION = "1"
# The list follows mount and dispose, which DSH may do at any moment. Over 2026-07-28 the only
# way to tell a client that its cached list went stale is ``notifications/tools/list_changed``
# on a ``subscriptions/listen`` stream, which this server (plain JSON responses) does not hold
# open; any positive TTL would then outlive the next change. 0 is the caching page's
# "immediately stale": the client may keep the list, but re-fetches it before relying on it.
LIST_TTL_MS = 0
# Where a 2025-era client, which cannot be asked by form, presents the approval DSH obtained.
APPROVAL_META = "io.arkme/approval"


class SessionServer(MCPServer):
    """One compiled toolset as an MCP server.

    The protocol is django-mcpz's, used through its public API (``MCPServer``, ``tool()``,
    ``elicit``, ``ToolError``) but for one documented point: ``_result``, through which the
    library sends every result. It is overridden to shorten the caching hint (``ttlMs``), to
    put a refusal's envelope on its tool error (the library's tool error carries text only) and
    to send the approval page's question in URL mode (the library asks in form mode only).
    tests/toolregistry/test_mcp_library.py pins that point and fails when the library changes it.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supported_versions = list(SUPPORTED_VERSIONS)

    def _result(self, request: HttpRequest, request_id: str | int, result: dict[str, Any], *,
                result_type: str = "complete") -> HttpResponse:
        if "ttlMs" in result:
            result = {**result, "ttlMs": LIST_TTL_MS}
        if result.get("isError") is True and "structuredContent" not in result:
            result = _tool_error(result)
        if result_type == "input_required":
            result = _url_questions(result)
        return super()._result(request, request_id, result, result_type=result_type)


def _url_questions(result: dict[str, Any]) -> dict[str, Any]:
    """An input-required result whose question is a URL one (the approval page): the library
    asks in form mode only, so the question's parameters become URL mode's, ``message`` and
    ``url`` (2026-07-28 names no ``elicitationId``)."""
    urls = current_exchange().urls
    requests = result.get("inputRequests")
    if not urls or not isinstance(requests, dict):
        return result
    rewritten = {}
    for key, asked in requests.items():
        if key in urls:
            asked = {**asked, "params": {"mode": "url", "message": asked["params"]["message"], "url": urls[key]}}
        rewritten[key] = asked
    return {**result, "inputRequests": rewritten}


def _tool_error(result: dict[str, Any]) -> dict[str, Any]:
    """A tool error as this server answers one: the refusal's REST envelope, as text for the
    model and as ``structuredContent``; the library's own (a tool that failed unexpectedly) in
    the same shape."""
    exchange = current_exchange()
    envelope = exchange.refusal
    if envelope is None:
        text = " ".join(str(part.get("text", "")) for part in result.get("content", []))
        envelope = ArkmeError(text, code=ErrorCode.INTERNAL_ERROR).as_envelope()
    return {**result, "content": [{"type": "text", "text": _json_text(envelope)}], "structuredContent": envelope}


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Refused(ToolError):
    """A refusal the model may read; its envelope is on the exchange."""


def _refuse(exchange: Exchange, envelope: dict[str, Any]) -> _Refused:
    exchange.refusal = envelope
    return _Refused(str(envelope["error"]["message"]))


def _answer(exchange: Exchange, outcome: CallResult) -> dict[str, Any]:
    """The pipeline's answer as the tool function's: the result, or the refusal raised."""
    if outcome.status >= 400:
        raise _refuse(exchange, outcome.body)
    result: dict[str, Any] = outcome.body["result"]
    return result


def _call(request: HttpRequest, exchange: Exchange, call: Call) -> CallResult:
    """The pipeline, after the questions this door can ask: a retry of a completed call gets the
    first call's answer before the human is asked again (by now the card may say something
    else, or nothing could run)."""
    replayed = tool_replay(call)
    if replayed is not None:
        return replayed
    asker: ElicitationAsker | StreamAsker = exchange.stream or ElicitationAsker(
        request, urls=exchange.urls if _opens_urls(exchange.meta) else None)
    if (asker.available or asker.opens_urls) and (call.needs_approval or call.known.definition.ask_human is not None):
        throttled = tool_throttled(call)  # nobody is asked about a call that cannot run now
        if throttled is not None:
            return throttled
    if call.needs_approval and _covered(call):
        pass  # a live standing grant covers the call: nobody is asked, the pipeline applies it
    elif call.needs_approval and approval_page_required(client=call.client, tool_name=call.known.metadata.name):
        call.approval = approval_on_page(call, asker if asker.opens_urls else None, exchange.meta.get(APPROVAL_META))
    elif call.needs_approval:
        call.approval = (approval_by_question(call, asker) if asker.available
                         else exchange.meta.get(APPROVAL_META))
    elif asker.available:
        confirmation_by_question(call, asker)
    return tool_execute(call)


def _opens_urls(meta: Mapping[str, Any]) -> bool:
    """Whether a 2026-07-28 client declared URL-mode elicitation in this request's capabilities."""
    capabilities = meta.get(META_CLIENT_CAPABILITIES)
    elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    return isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict)


def _covered(call: Call) -> bool:
    """Whether a live standing grant covers this call; arguments the tool refuses are left to
    the pipeline, which refuses them the same way on every door."""
    try:
        return standing_grant_covering(call) is not None
    except ArkmeError:
        return False


def _tool_function(tool: CompiledTool) -> Any:
    def run(request: HttpRequest, arguments: dict[str, Any]) -> dict[str, Any]:
        exchange = current_exchange()
        try:
            # ``tool`` is this session's: the server answering is its toolset's, so the call
            # does not look it up again.
            call = Call(client=exchange.client, session=exchange.session, name=tool.metadata.name, tool=tool,
                            raw_arguments=arguments, surface=Surface.MCP,
                            idempotency_key=idempotency_key_of(request))
            return _answer(exchange, _call(request, exchange, call))
        except ArkmeError as error:
            raise _refuse(exchange, error.as_envelope()) from None
        except DATABASE_ERRORS as exc:
            # A database outage is the tool error database_unavailable, as REST's 503 is.
            outage = outage_error(exc)
            if outage is None:
                raise
            logger.warning("a tool call met a database outage: %s", outage_summary(exc))
            raise _refuse(exchange, outage.as_envelope()) from None

    return run


# A refusal's ``structuredContent`` is the REST envelope. Clients validate structured content
# against ``outputSchema`` (the TypeScript SDK even on tool errors), so the published schema
# admits both: the tool's result or the envelope.
ERROR_ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"error": {
        "type": "object",
        "properties": {"code": {"enum": [str(code) for code in ErrorCode]}, "message": {"type": "string"},
                       "details": {"type": "object"}},
        "required": ["code", "message"],
        "additionalProperties": False,
    }},
    "required": ["error"],
    "additionalProperties": False,
}


def output_schema(tool: CompiledTool) -> dict[str, Any]:
    """The MCP ``outputSchema``: the tool's result schema (its OpenAPI ``ToolResult_<name>``),
    or a refusal's envelope."""
    return {"type": "object", "anyOf": [dict(tool.definition.output_schema), ERROR_ENVELOPE_SCHEMA]}


def _build_server(toolset: Toolset) -> SessionServer:
    server = SessionServer(name=SERVER_NAME, version=SERVER_VERSION, title="Arkme tool registry",
                           instructions=toolset.prompt or None, auth=lambda request: None)
    for tool in toolset.tools:
        hints = tool.metadata.annotations()
        server.tool(
            name=tool.metadata.name, title=tool.metadata.title, description=tool.definition.description,
            input_schema=dict(tool.definition.input_schema), output_schema=output_schema(tool),
            read_only=hints["readOnlyHint"], destructive=hints["destructiveHint"],
            idempotent=hints["idempotentHint"], open_world=hints["openWorldHint"],
        )(_tool_function(tool))
    return server


_servers: dict[str, SessionServer] = {}
_servers_lock = threading.Lock()


def server_for(toolset: Toolset) -> SessionServer:
    """The server of a compiled toolset, built once: toolsets are few and immutable."""
    server = _servers.get(toolset.revision)
    if server is None:
        with _servers_lock:
            server = _servers.get(toolset.revision)
            if server is None:
                server = _servers[toolset.revision] = _build_server(toolset)
    return server
