"""The MCP surface: every session is also a Model Context Protocol server.

It is a second door into the same pipeline as REST execute (visibility, argument validation,
idempotency, the approval ledger, audit), never a looser one. django-mcpz speaks the protocol
(JSON-RPC framing, version negotiation, the 2026-07-28 header and ``_meta`` checks, the signed
``requestState`` of multi round-trip requests, the stateless 2025 handshake) as a plain
synchronous Django view, so it runs in the same gunicorn workers as the REST API.

What this module adds is the registry's part:
- one server per compiled toolset (profile and mounted phases), so ``tools/list`` is the
  session view's list and ``instructions`` its guidance;
- refusals as tool errors carrying the REST envelope in ``structuredContent``;
- pre-execute approvals as a form elicitation whose ``requestState`` names the approval only
  by its digest and is spent by the ledger (single use is the server's, not the client's);
- the gallery's 确认 as a form elicitation, whose reply confirms the operation it was asked for.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django_mcpz.elicitation import Elicitation
from django_mcpz.jsonrpc import INVALID_REQUEST, PARSE_ERROR, read_id
from django_mcpz.legacy import LEGACY_PROTOCOL_VERSIONS
from django_mcpz.server import (
    UNSUPPORTED_PROTOCOL_VERSION,
    ElicitationDeclinedError,
    MCPServer,
    ToolError,
    elicit,
    host_allowed,
)
from opentelemetry.trace import Span, SpanKind, StatusCode
from rest_framework.exceptions import ParseError

from arkme.conversations.messages import MESSAGE_TEXT_MAX
from arkme.conversations.models import AgentSession, DshClient
from arkme.conversations.sessions import session_for_key
from arkme.kernel.errors import ApprovalDeclined, ApprovalRequired, ArkmeError, ErrorCode, NotAuthenticated
from arkme.kernel.ids import token_digest
from arkme.kernel.metrics import APPROVALS
from arkme.kernel.outages import DATABASE_ERRORS, outage_error, outage_summary
from arkme.kernel.text import size_text
from arkme.kernel.tracing import event
from arkme.kernel.tracing import span as traced_span

from ..approvals import SealedApproval
from ..execution import CallResult, approval_card, tool_context, tool_declined, tool_execute, tool_replay
from ..metadata import Approval
from ..models import Surface
from ..registrar import CompiledTool, Toolset
from ..sessions import session_toolset
from .idempotency_key import idempotency_key_of
from .parsers import loads_strict

logger = logging.getLogger(__name__)

SERVER_NAME = "arkme-tool-registry"
SERVER_VERSION = "1"
# The list follows mount and dispose, which DSH may do at any moment. Over 2026-07-28 the only
# way to tell a client that its cached list went stale is ``notifications/tools/list_changed``
# on a ``subscriptions/listen`` stream, which this server (plain JSON responses) does not hold
# open; any positive TTL would then outlive the next change. 0 is the caching page's
# "immediately stale": the client may keep the list, but re-fetches it before relying on it.
LIST_TTL_MS = 0
# The versions served: 2026-07-28 and the 2025 revisions served statelessly. 2025-03-26 is not
# offered: its JSON-RPC batches are not served (the library refuses them).
PROTOCOL_VERSION = "2026-07-28"
EARLIER_VERSIONS = ("2025-11-25", "2025-06-18")
SUPPORTED_VERSIONS = (PROTOCOL_VERSION, *EARLIER_VERSIONS)
# The 2025-06-18 schema requires a response's ``id``; later ones leave it out when unknown.
ID_REQUIRED_VERSIONS = frozenset({"2025-06-18"})
SESSION_NOT_FOUND = "Session not found"
APPROVAL_META = "io.arkme/approval"
APPROVAL_KEY = "approval"
REPLY_KEY = "reply"
APPROVE_SCHEMA = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve",
                               "description": "Run this call exactly as described."}},
    "required": ["approve"],
}
REPLY_SCHEMA = {
    "type": "object",
    "properties": {"reply": {"type": "string", "title": "Reply", "maxLength": MESSAGE_TEXT_MAX}},
    "required": ["reply"],
}
WWW_AUTHENTICATE = 'Bearer realm="dsh"'


@dataclass(frozen=True)
class _Principal:
    """Who django-mcpz binds a ``requestState`` to: this client in this session."""

    pk: str
    is_authenticated: bool = True


@dataclass(frozen=True)
class _Call:
    client: DshClient
    session: AgentSession


class _Refused(ToolError):
    """A refusal the model may read: the REST error envelope, as a tool error."""

    def __init__(self, envelope: dict[str, Any]) -> None:
        super().__init__(str(envelope["error"]["message"]))
        self.envelope = envelope


class SessionServer(MCPServer):
    """One compiled toolset as an MCP server. The protocol is django-mcpz's; these overrides
    carry the call's ``_meta`` to the tool, put the envelope on tool errors, shorten the
    caching hint and name only the versions served."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supported_versions = list(SUPPORTED_VERSIONS)

    def _tools_call(self, request: HttpRequest, request_id: str | int, params: dict[str, Any], *,
                    legacy: bool = False) -> HttpResponse:
        meta = params.get("_meta")
        request.arkme_mcp_meta = meta if isinstance(meta, dict) else {}  # type: ignore[attr-defined]
        request.arkme_mcp_legacy = legacy  # type: ignore[attr-defined]
        name = params.get("name")
        label = name if isinstance(name, str) and name in self._tools else "unknown"
        with _server_span(request, "tools/call", request_id, label) as span:
            response = super()._tools_call(request, request_id, params, legacy=legacy)
            _record_outcome(span, request, response)
            return response

    def _tools_list(self, request: HttpRequest, request_id: str | int, params: dict[str, Any]) -> HttpResponse:
        with _server_span(request, "tools/list", request_id, None) as span:
            response = super()._tools_list(request, request_id, params)
            _record_outcome(span, request, response)
            return response

    def _tool_error(self, request: HttpRequest, request_id: str | int, text: str) -> HttpResponse:
        envelope = getattr(request, "arkme_refusal", None)
        if envelope is None:
            # The library's own in-band errors (a tool that failed unexpectedly): the same shape.
            envelope = {"error": {"code": "internal_error", "message": text}}
        return self._result(request, request_id, {
            "content": [{"type": "text", "text": _json_text(envelope)}],
            "structuredContent": envelope,
            "isError": True,
        })

    def _result(self, request: HttpRequest, request_id: str | int, result: dict[str, Any], *,
                result_type: str = "complete") -> HttpResponse:
        if "ttlMs" in result:
            result = {**result, "ttlMs": LIST_TTL_MS}
        return super()._result(request, request_id, result, result_type=result_type)


@contextmanager
def _server_span(request: HttpRequest, method: str, request_id: str | int, tool: str | None) -> Iterator[Span]:
    """The MCP conventions' server span: ``{mcp.method.name} {target}``."""
    attributes: dict[str, str] = {
        "mcp.method.name": method, "jsonrpc.request.id": str(request_id), "network.transport": "tcp",
        "network.protocol.name": "http",
        "mcp.protocol.version": request.headers.get("MCP-Protocol-Version", "") or "2025-03-26",
    }
    if tool is not None:
        attributes.update({"gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool"})
    name = f"{method} {tool}" if tool else method
    with traced_span(name, attributes, SpanKind.SERVER) as span:
        yield span


def _record_outcome(span: Span, request: HttpRequest, response: HttpResponse) -> None:
    if not span.is_recording():
        return
    refusal = getattr(request, "arkme_refusal", None)
    if refusal is not None:
        error_type = str(refusal["error"]["code"])
    else:
        try:
            body = json.loads(response.content)
        except ValueError:
            return
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return
        error_type = str(error.get("code"))
    span.set_attribute("error.type", error_type)
    span.set_status(StatusCode.ERROR, error_type)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _refuse(request: HttpRequest, envelope: dict[str, Any]) -> _Refused:
    request.arkme_refusal = envelope  # type: ignore[attr-defined]
    return _Refused(envelope)


def _can_elicit(request: HttpRequest) -> bool:
    """2026-07-28 clients that answer form elicitations; earlier ones use ``_meta`` and REST."""
    elicitation: Elicitation = request.mcp_elicitation  # type: ignore[attr-defined]
    return not getattr(request, "arkme_mcp_legacy", True) and elicitation.unavailable is None


def _approval_by_elicitation(request: HttpRequest, call: _Call, tool: CompiledTool,
                             arguments: dict[str, Any]) -> SealedApproval:
    """Ask the human to approve this exact call, or take their answer to the question asked.

    The question's key carries a random nonce, when it was asked and the card's digest;
    django-mcpz signs the key into the ``requestState`` together with the client, the session,
    the tool and the arguments' digest. Nothing is stored until the answer is used: the ledger
    then records the nonce once, so a replayed state is refused.
    """
    elicitation: Elicitation = request.mcp_elicitation  # type: ignore[attr-defined]
    asked = [key for key in elicitation.answers if key.startswith(APPROVAL_KEY + ".")]
    try:
        card = approval_card(call.session, tool, arguments)
    except ArkmeError as error:
        raise _refuse(request, error.as_envelope()) from None
    text = _card_text(card.title, card.body)
    if not asked:
        key = f"{APPROVAL_KEY}.{secrets.token_urlsafe(16)}.{int(time.time())}.{_digest(text)}"
        APPROVALS.labels("asked").inc()
        event("arkme.approval.asked")
        elicit(request, text, APPROVE_SCHEMA, key=key, expired_message=None)
        raise AssertionError("elicit() asks before it answers")  # pragma: no cover
    _, nonce, asked_at, card_digest = asked[0].split(".")
    sealed = SealedApproval(nonce=nonce, asked_at=datetime.fromtimestamp(int(asked_at), tz=UTC))
    if _digest(text) != card_digest:
        # What the human saw is not what would run now: nothing runs on that answer.
        APPROVALS.labels("refused_card_changed").inc()
        event("arkme.approval.refused", **{"arkme.approval.reason": "card_changed"})
        raise _refuse(request, ApprovalRequired(details={"reason": "card_changed"}).as_envelope())
    try:
        answer = elicit(request, text, APPROVE_SCHEMA, key=asked[0], expired_message=None)
    except ElicitationDeclinedError:
        answer = {}
    approved = answer.get("approve") is True
    event("arkme.approval.decided", **{"arkme.approval.decision": "approved" if approved else "declined"})
    if not approved:
        declined = tool_declined(session=call.session, tool=tool, arguments=arguments, approval=sealed,
                                 error=ApprovalDeclined())
        raise _refuse(request, declined.body)
    return sealed


def _card_text(title: str, body: str) -> str:
    return f"{title}\n\n{body}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _confirmation_by_elicitation(request: HttpRequest, call: _Call, tool: CompiledTool,
                                 arguments: dict[str, Any]) -> None:
    """Ask the human the prepare's question when no 确认 is recorded after it. The reply is
    recorded by the tool for the operation it was asked about (it confirms that one alone),
    held to a message's text rules; confirm then decides."""
    ask, record = tool.definition.ask_human, tool.definition.record_reply
    if ask is None or record is None or not tool.validator.is_valid(arguments):
        return  # invalid arguments are refused by the pipeline, the same way as over REST
    context = tool_context(call.session)
    question = ask(context, arguments)
    if question is None:
        return
    event("arkme.confirmation.asked")
    try:
        answer = elicit(request, question, REPLY_SCHEMA, key=REPLY_KEY, expired_message=None)
    except ElicitationDeclinedError:
        event("arkme.confirmation.answered", **{"arkme.confirmation.replied": False})
        return  # nothing recorded: confirm says the 确认 is missing and the add stays pending
    reply = answer.get("reply")
    event("arkme.confirmation.answered", **{"arkme.confirmation.replied": bool(isinstance(reply, str) and reply.strip())})
    if not isinstance(reply, str):
        return
    try:
        record(context, arguments, reply)
    except ArkmeError as error:
        raise _refuse(request, error.as_envelope()) from None


def _run(request: HttpRequest, tool: CompiledTool, arguments: dict[str, Any]) -> dict[str, Any]:
    call: _Call = request.arkme_mcp  # type: ignore[attr-defined]
    try:
        key = idempotency_key_of(request)
    except ArkmeError as error:
        raise _refuse(request, error.as_envelope()) from None
    if key is not None:
        # A retry after a lost answer gets the first call's result, as over REST, before the
        # human is asked again: by now the card may say something else, or nothing could run.
        replayed = tool_replay(client=call.client, session=call.session, name=tool.metadata.name,
                               arguments=arguments, idempotency_key=key, surface=Surface.MCP, tool=tool)
        if replayed is not None:
            return _answer(request, replayed)
    approval: object = None
    if tool.metadata.approval is Approval.PRE_EXECUTE:
        if _can_elicit(request):
            approval = _approval_by_elicitation(request, call, tool, arguments)
        else:
            approval = request.arkme_mcp_meta.get(APPROVAL_META)  # type: ignore[attr-defined]
    elif _can_elicit(request):
        _confirmation_by_elicitation(request, call, tool, arguments)
    # ``tool`` is this session's: the server answering is its toolset's (``session_mcp``), so the
    # pipeline does not look it up again.
    outcome = tool_execute(client=call.client, session=call.session, name=tool.metadata.name,
                           arguments=arguments, approval=approval, idempotency_key=key, surface=Surface.MCP,
                           tool=tool)
    return _answer(request, outcome)


def _answer(request: HttpRequest, outcome: CallResult) -> dict[str, Any]:
    """The pipeline's answer as the tool function's: the result, or the refusal raised."""
    if outcome.status >= 400:
        raise _refuse(request, outcome.body)
    result: dict[str, Any] = outcome.body["result"]
    return result


def _tool_function(tool: CompiledTool) -> Any:
    def run(request: HttpRequest, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return _run(request, tool, arguments)
        except DATABASE_ERRORS as exc:
            # A database outage is the tool error database_unavailable, as REST's 503 is.
            outage = outage_error(exc)
            if outage is None:
                raise
            logger.warning("a tool call met a database outage: %s", outage_summary(exc))
            raise _refuse(request, outage.as_envelope()) from None

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


def _origin_allowed(request: HttpRequest) -> bool:
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    return host is not None and host_allowed(host)


def _key(request: HttpRequest) -> str:
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip() or " " in key.strip():
        raise NotAuthenticated("Use 'Authorization: Bearer <client key>'.")
    return key.strip()


def _rpc_error(request: HttpRequest, request_id: object, code: int, message: str, *, status: int,
               data: Any = None) -> HttpResponse:
    """A JSON-RPC error response as the request's protocol version has it: without ``id`` when
    the request's is not known (2025-11-25 and 2026-07-28 leave it out), ``null`` on 2025-06-18,
    whose schema requires an ``id`` and where JSON-RPC 2.0 spells an unknown one so."""
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(request_id, str | int) and not isinstance(request_id, bool):
        body["id"] = request_id
    elif request.headers.get("MCP-Protocol-Version") in ID_REQUIRED_VERSIONS:
        body["id"] = None
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body["error"] = error
    return JsonResponse(body, status=status)


def _unknown_id_left_out(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """The library answers a message it could not read with ``"id": null``; the schemas of
    2025-11-25 and 2026-07-28 leave the member out instead. Only such refusals (HTTP 4xx) are
    read again, never a call's answer."""
    if response.status_code < 400 or request.headers.get("MCP-Protocol-Version") in ID_REQUIRED_VERSIONS:
        return response
    try:
        body = json.loads(response.content)
    except ValueError:
        return response
    if isinstance(body, dict) and "id" in body and body["id"] is None and "error" in body:
        del body["id"]
        response.content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return response


def _initialized(response: HttpResponse) -> HttpResponse:
    """``initialize`` answers a version this server serves: the library would agree to
    2025-03-26, whose batches it then refuses."""
    if response.status_code != HTTPStatus.OK:
        return response
    try:
        body = json.loads(response.content)
    except ValueError:
        return response
    result = body.get("result") if isinstance(body, dict) else None
    if isinstance(result, dict) and result.get("protocolVersion") not in SUPPORTED_VERSIONS:
        result["protocolVersion"] = EARLIER_VERSIONS[0]
        response.content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return response


@csrf_exempt
def session_mcp(request: HttpRequest, session: str) -> HttpResponse:
    """``POST /dsh/v1/sessions/{s}/mcp``: the session's MCP server (Streamable HTTP, JSON)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not _origin_allowed(request):
        # DNS rebinding: a browser page on another origin must not reach a local server.
        return _rpc_error(request, None, INVALID_REQUEST, "Invalid Origin header", status=HTTPStatus.FORBIDDEN)
    try:
        client, agent_session = session_for_key(_key(request), session)
    except ArkmeError as error:
        if error.http_status == HTTPStatus.NOT_FOUND:
            # Still the contract's 404, with a JSON-RPC error an SDK surfaces (the official
            # SDKs' own servers answer an unknown session so); ``data`` is the REST envelope.
            return _rpc_error(request, read_id(_readable(request)), INVALID_REQUEST, SESSION_NOT_FOUND,
                              status=HTTPStatus.NOT_FOUND, data=error.as_envelope())
        response = JsonResponse(error.as_envelope(), status=error.http_status)
        if error.http_status == HTTPStatus.UNAUTHORIZED:
            response["WWW-Authenticate"] = WWW_AUTHENTICATE
        return response
    version = request.headers.get("MCP-Protocol-Version")
    try:
        # The same limits as every JSON body here (size, depth, valid Unicode): the protocol
        # library's decoder would meet a deeply nested body with a RecursionError.
        message = loads_strict(request.body)
    except RequestDataTooBig:
        # Django's own answer would be an HTML page; a JSON-RPC client reads an error object.
        return _rpc_error(request, None, INVALID_REQUEST,
                          f"The request body is larger than {size_text(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}.",
                          status=HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    except ParseError as error:
        return _rpc_error(request, None, PARSE_ERROR, str(error.detail), status=HTTPStatus.BAD_REQUEST)
    if version is not None and version not in SUPPORTED_VERSIONS and version in LEGACY_PROTOCOL_VERSIONS:
        # A version the library knows but this server does not offer: the transport's 400.
        return _rpc_error(request, read_id(message), UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                          status=HTTPStatus.BAD_REQUEST,
                          data={"supported": list(SUPPORTED_VERSIONS), "requested": version})
    request.arkme_mcp = _Call(client=client, session=agent_session)  # type: ignore[attr-defined]
    request.user = _principal(client.pk, agent_session.public_id)  # type: ignore[assignment]
    answer = _unknown_id_left_out(request, server_for(session_toolset(agent_session))(request))
    if isinstance(message, dict) and message.get("method") == "initialize":
        answer = _initialized(answer)
    return answer


@functools.lru_cache(maxsize=4096)
def _principal(client: object, session: str) -> _Principal:
    """Who a ``requestState`` is bound to: opaque, since the state is signed, not encrypted, and
    a host may read it. Found once per client and session (a digest on every call otherwise)."""
    return _Principal("dsh" + token_digest(f"{client}:{session}")[:32])


def _readable(request: HttpRequest) -> object:
    """The body as JSON when it is, for the id of an answer given before it is read; None
    otherwise (a body too large or not JSON has no id to echo)."""
    try:
        return loads_strict(request.body)
    except (RequestDataTooBig, ParseError):
        return None
