"""``POST /dsh/v1/sessions/{s}/mcp``: who calls, what they sent, and the transport's answers.

The door reads the client key and the session once, reads the body once under the API's JSON
limits, and hands the session's server an ``Exchange``: the client, the session
and the call's ``_meta`` (``exchange.py``).
"""
from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django_mcpz.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from django_mcpz.legacy import LEGACY_PROTOCOL_VERSIONS
from django_mcpz.server import UNSUPPORTED_PROTOCOL_VERSION, host_allowed
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, StatusCode
from rest_framework.exceptions import ParseError

from arkme.conversations.clients import bearer_key
from arkme.conversations.sessions import session_for_key
from arkme.kernel.errors import ArkmeError, ErrorCode, NotAuthenticated, refusal_headers
from arkme.kernel.ids import token_digest
from arkme.kernel.text import size_text
from arkme.kernel.tracing import caller_context, tracing_on
from arkme.kernel.tracing import span as traced_span

from ..api.parsers import loads_strict
from ..registrar import Toolset
from ..toolsets import session_toolset
from .asking import StreamAsker
from .exchange import EARLIER_VERSIONS, ID_REQUIRED_VERSIONS, SUPPORTED_VERSIONS, Exchange, serving
from .server import APPROVAL_META, server_for
from .stream import accepts_stream, answer_message, answer_received, streamed_call

SESSION_NOT_FOUND = "Session not found"

@dataclass(frozen=True)
class _Principal:
    """Who django-mcpz binds a ``requestState`` to: this client in this session."""

    pk: str
    is_authenticated: bool = True


@functools.lru_cache(maxsize=4096)
def _principal(client: object, session: str) -> _Principal:
    """Opaque, since the state is signed, not encrypted, and a host may read it. Found once per
    client and session (a digest on every call otherwise)."""
    return _Principal("dsh" + token_digest(f"{client}:{session}")[:32])


def _origin_allowed(request: HttpRequest) -> bool:
    """The library's rule (``host_allowed``), applied before the session is read: the server
    to answer depends on the session."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    return host is not None and host_allowed(host)


def rpc_error(request: HttpRequest, request_id: object, code: int, message: str, *, status: int,
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


def _rewritten(response: HttpResponse, rewrite: Any) -> HttpResponse:
    """The response with its JSON body passed through ``rewrite`` (which changes it in place and
    says whether it did); any other body is left alone."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return response
    if isinstance(body, dict) and rewrite(body):
        response.content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return response


def _unknown_id_left_out(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """The library answers a message it could not read with ``"id": null``; the schemas of
    2025-11-25 and 2026-07-28 leave the member out instead. Only such refusals (HTTP 4xx) are
    read again, never a call's answer."""
    if response.status_code < 400 or request.headers.get("MCP-Protocol-Version") in ID_REQUIRED_VERSIONS:
        return response

    def rewrite(body: dict[str, Any]) -> bool:
        if "id" in body and body["id"] is None and "error" in body:
            del body["id"]
            return True
        return False

    return _rewritten(response, rewrite)


def _initialized(response: HttpResponse) -> HttpResponse:
    """``initialize`` answers a version this server serves: the library would agree to
    2025-03-26, whose batches it then refuses."""
    if response.status_code != HTTPStatus.OK:
        return response

    def rewrite(body: dict[str, Any]) -> bool:
        result = body.get("result")
        if isinstance(result, dict) and result.get("protocolVersion") not in SUPPORTED_VERSIONS:
            result["protocolVersion"] = EARLIER_VERSIONS[0]
            return True
        return False

    return _rewritten(response, rewrite)


def _refused_before_the_call(request: HttpRequest, error: ArkmeError, message: object) -> HttpResponse:
    """A key or session refused: the contract's status and envelope."""
    if error.http_status == HTTPStatus.NOT_FOUND:
        # Still the contract's 404, with a JSON-RPC error an SDK surfaces (the official SDKs'
        # own servers answer an unknown session so); ``data`` is the REST envelope.
        return rpc_error(request, _request_id(message), INVALID_REQUEST, SESSION_NOT_FOUND,
                         status=HTTPStatus.NOT_FOUND, data=error.as_envelope())
    envelope = error.as_envelope()
    return JsonResponse(envelope, status=error.http_status, headers=refusal_headers(error.http_status, envelope))


def _request_id(message: object) -> object:
    return message.get("id") if isinstance(message, dict) else None


def _read(request: HttpRequest) -> object | HttpResponse:
    """The body under the API's JSON limits (size, depth, valid Unicode), or the answer to a body
    that breaks them: the protocol library's decoder would meet a deeply nested body with a
    RecursionError, and Django's own answer to a body too large is an HTML page."""
    try:
        message: object = loads_strict(request.body)
    except RequestDataTooBig:
        return rpc_error(request, None, INVALID_REQUEST,
                         f"The request body is larger than {size_text(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}.",
                         status=HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    except ParseError as error:
        return rpc_error(request, None, PARSE_ERROR, str(error.detail), status=HTTPStatus.BAD_REQUEST)
    return message


@csrf_exempt
def session_mcp(request: HttpRequest, session: str) -> HttpResponseBase:
    """``POST /dsh/v1/sessions/{s}/mcp``: the session's MCP server (Streamable HTTP, JSON)."""
    if request.method != "POST":
        # The 2026-07-28 transport has no GET stream and no DELETE: the API's 405 envelope.
        refused = ArkmeError("This method is not allowed here.", code=ErrorCode.METHOD_NOT_ALLOWED)
        return JsonResponse(refused.as_envelope(), status=HTTPStatus.METHOD_NOT_ALLOWED, headers={"Allow": "POST"})
    if not _origin_allowed(request):
        # DNS rebinding: a browser page on another origin must not reach a local server.
        return rpc_error(request, None, INVALID_REQUEST, "Invalid Origin header", status=HTTPStatus.FORBIDDEN)
    try:
        key = bearer_key(request.headers.get("Authorization", ""))
        if key is None:
            raise NotAuthenticated("Use 'Authorization: Bearer <client key>'.")
        client, agent_session = session_for_key(key, session)
    except ArkmeError as error:
        return _refused_before_the_call(request, error, _read_quietly(request, error))
    message = _read(request)
    if isinstance(message, HttpResponse):
        return message
    version = request.headers.get("MCP-Protocol-Version")
    if version is not None and version not in SUPPORTED_VERSIONS and version in LEGACY_PROTOCOL_VERSIONS:
        # A version the library knows but this server does not offer: the transport's 400.
        return rpc_error(request, _request_id(message), UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                         status=HTTPStatus.BAD_REQUEST,
                         data={"supported": list(SUPPORTED_VERSIONS), "requested": version})
    exchange = Exchange(client=client, session=agent_session, meta=_meta(message))
    if isinstance(message, dict) and answer_message(message):
        # A 2025-era client's answer to a question asked on a call's stream (stream.py).
        if answer_received(exchange, message):
            return HttpResponse(status=HTTPStatus.ACCEPTED)
        return rpc_error(request, None, INVALID_REQUEST, "No question is waiting for this answer.",
                         status=HTTPStatus.BAD_REQUEST)
    if version in EARLIER_VERSIONS and APPROVAL_META not in exchange.meta and accepts_stream(request):
        # Questions are asked on the call's stream; an approval the host brought asks nothing.
        exchange.stream = StreamAsker(urls=version == "2025-11-25")  # URL mode is 2025-11-25's
    toolset = session_toolset(agent_session)
    request.user = _principal(client.pk, agent_session.public_id)  # type: ignore[assignment]
    server = server_for(toolset)
    with serving(exchange), _server_span(request, message, toolset) as span:
        answer = _unknown_id_left_out(request, server(request))
        _record_outcome(span, exchange, answer)
        if exchange.stream is not None and exchange.stream.pending is not None:
            return streamed_call(request, exchange, exchange.stream,
                                 lambda: _unknown_id_left_out(request, server(request)))
    if isinstance(message, dict) and message.get("method") == "initialize":
        answer = _initialized(answer)
    return answer


def _read_quietly(request: HttpRequest, error: ArkmeError) -> object:
    """The body, for the id of a 404's JSON-RPC error; not read for the other refusals."""
    if error.http_status != HTTPStatus.NOT_FOUND:
        return None
    message = _read(request)
    return None if isinstance(message, HttpResponse) else message


def _meta(message: object) -> Mapping[str, Any]:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


@contextmanager
def _server_span(request: HttpRequest, message: object, toolset: Toolset) -> Iterator[Span | None]:
    """The MCP conventions' server span of ``tools/call`` and ``tools/list``:
    ``{mcp.method.name} {target}``."""
    method = message.get("method") if isinstance(message, dict) else None
    if method not in ("tools/call", "tools/list") or not isinstance(message, dict):
        yield None
        return
    attributes: dict[str, str] = {
        "mcp.method.name": method, "jsonrpc.request.id": str(message.get("id")), "network.transport": "tcp",
        "network.protocol.name": "http",
        "mcp.protocol.version": request.headers.get("MCP-Protocol-Version", "") or "2025-03-26",
    }
    tool = None
    if method == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        tool = name if isinstance(name, str) and toolset.get(name) is not None else "unknown"
        attributes.update({"gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool"})
    parent = _caller(request, message) if tracing_on() else None
    with traced_span(f"{method} {tool}" if tool else method, attributes, SpanKind.SERVER, parent) as span:
        yield span


def _caller(request: HttpRequest, message: object) -> Context | None:
    """The caller's trace: the request's ``params._meta.traceparent`` (MCP's own place for it,
    per message), else the HTTP request's ``traceparent`` header; a malformed one is ignored."""
    meta = _meta(message)
    if isinstance(meta.get("traceparent"), str):
        return caller_context(meta["traceparent"], meta.get("tracestate"))
    return caller_context(request.headers.get("traceparent"), request.headers.get("tracestate"))


def _record_outcome(span: Span | None, exchange: Exchange, response: HttpResponse) -> None:
    if span is None or not span.is_recording():
        return
    if exchange.refusal is not None:
        error_type = str(exchange.refusal["error"]["code"])
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
