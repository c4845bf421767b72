"""The DSH API. Views parse, call one service, and project; rules live in the services."""
from __future__ import annotations

import functools
import json
from typing import Any, cast

from django.db import transaction
from django.http import HttpResponse, HttpResponseNotModified
from django.http.request import RawPostDataException
from django.utils.http import parse_etags
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from arkme.conversations.messages import message_record
from arkme.conversations.models import AgentSession, DshClient
from arkme.conversations.sessions import session_close, session_open, session_set_attachments
from arkme.kernel.errors import refusal_headers

from ..approvals import approval_status
from ..calls import call_for
from ..catalog import CATALOG, Catalog
from ..execution import tool_execute, tool_pre_execute
from ..models import Surface
from ..registrar import Toolset
from ..toolsets import session_toolset
from . import serializers as s
from .authentication import request_session
from .base import DshApiView
from .idempotency_key import idempotency_key_of
from .parsers import CompleteMultiPartParser, StrictJSONParser, loads_strict

ERRORS = {
    400: OpenApiResponse(s.ErrorEnvelope, description="Malformed request or arguments."),
    401: OpenApiResponse(s.ErrorEnvelope, description="Missing, unknown or revoked client key."),
    403: OpenApiResponse(s.ErrorEnvelope, description="Ownership, approval or profile."),
    404: OpenApiResponse(s.ErrorEnvelope, description="Unknown or invisible tool, session or object."),
    409: OpenApiResponse(s.ErrorEnvelope, description="State conflict."),
    413: OpenApiResponse(s.ErrorEnvelope, description="Payload too large."),
    422: OpenApiResponse(s.ErrorEnvelope, description="Content rejected."),
    429: OpenApiResponse(s.ErrorEnvelope, description="Past a limit on calls (`throttled`, ARKME_RATE_LIMITS): "
                         "nothing was done; `details.retry_after_seconds` and the `Retry-After` header say when "
                         "the call may run."),
    503: OpenApiResponse(s.ErrorEnvelope, description="A dependency is unavailable; safe to retry."),
}


# W3C Trace Context: a caller's span that the call's spans continue (README, "Traces").
TRACE_HEADERS = [
    OpenApiParameter("traceparent", str, OpenApiParameter.HEADER, required=False,
                     description="W3C Trace Context: the call's spans become children of this span; a malformed "
                                 "value is ignored."),
    OpenApiParameter("tracestate", str, OpenApiParameter.HEADER, required=False,
                     description="W3C Trace Context vendor state, kept with the caller's traceparent."),
]
RETRY_AFTER = OpenApiParameter(
    "Retry-After", int, OpenApiParameter.HEADER, response=[429, 503],
    description="Seconds until trying again is worth it: on a 429, when the limit lets the call run "
                "(`details.retry_after_seconds`); on a 503, when the dependency may be back.")


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: ERRORS[code] for code in (401, *codes)}


def session_response(session: AgentSession, status: int = 200, *, toolset: Toolset | None = None) -> HttpResponse:
    """The session view, built around the toolset's pre-serialised part: listing tools costs a
    look-up and a string join, not a JSON encoding of every definition. ``toolset`` is the
    session's, when the caller has already looked it up."""
    if toolset is None:
        toolset = session_toolset(session)
    head = json.dumps({"session": session.public_id, "profile": session.profile}, ensure_ascii=False,
                      separators=(",", ":"))[:-1]
    response = HttpResponse(f"{head},{toolset.view_fragment}}}".encode(), status=status,
                            content_type="application/json")
    response["ETag"] = f'"{toolset.revision}"'
    return response


def _client(request: Request) -> DshClient:
    """The authenticated DSH client: DRF puts it where a user would be."""
    return cast(DshClient, request.user)


def _validated(serializer_class: type[Serializer], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return cast(dict[str, Any], serializer.validated_data)


def _json_data(request: Request) -> Any:
    """``request.data`` for a body sent as exactly ``application/json``, parsed as the API's
    one JSON parser parses it, without DRF's per-request parser selection, media type
    parsing and stream wrapping (about 10 µs of a cheap call, more than the parse itself).
    Any other body, an empty one included, goes through DRF, which refuses an unsupported
    media type with its 415 and answers an empty body with ``{}``."""
    if request.META.get("CONTENT_TYPE") == "application/json":
        try:
            raw = request.body  # Django's request's, through DRF's documented proxy
        except RawPostDataException:  # read by someone before: DRF knows what to do
            return request.data
        if raw:
            return loads_strict(raw)
    return request.data


@functools.cache
def _field_names(serializer_class: type[Serializer]) -> frozenset[str]:
    """The names a body of this serializer may carry (its fields, built once per class)."""
    return frozenset(serializer_class().fields)


def _call_request(serializer_class: type[s.ArgumentsRequest], request: Request) -> dict[str, Any]:
    """A call's body. The usual well-formed one (an ``arguments`` value and no approval, or a
    null one) is taken as it is: running the serializer over it cost more than a tenth of a
    cheap call and finds nothing. Anything else goes through the serializer, so every refusal
    keeps its field and message."""
    data = _json_data(request)
    if (isinstance(data, dict) and data.get("arguments") is not None and data.get("approval") is None
            and data.keys() <= _field_names(serializer_class)):
        return {"arguments": data["arguments"]}
    return _validated(serializer_class, request)


_catalog_body: tuple[Catalog, bytes] | None = None


def catalog_body(catalog: Catalog) -> bytes:
    """The catalog is static: its body is encoded once per process (and again only for
    another catalog object), not on every call."""
    global _catalog_body
    cached = _catalog_body
    if cached is None or cached[0] is not catalog:
        tools = [{"name": m.METADATA.name, **m.METADATA.as_dict(), "profiles": list(m.METADATA.profiles)}
                 for m in catalog.modules]
        profiles = [{"name": name, "kinds": sorted(kinds)} for name, kinds in catalog.profile_kinds.items()]
        body = json.dumps({"tools": tools, "profiles": profiles, "default_profile": catalog.default_profile},
                          ensure_ascii=False, separators=(",", ":")).encode()
        cached = _catalog_body = (catalog, body)
    return cached[1]


class CatalogApi(DshApiView):
    @extend_schema(
        operation_id="catalog", responses={200: s.CatalogView, **errors()},
        summary="The static catalog, the profiles and the default profile",
        description="Every tool module's metadata in catalog order (id, model-facing name, kind, phase, effect, "
                    "grant, approval, the MCP annotations and the profiles that show it), the profiles with the "
                    "kinds of tool each shows, and the default profile. It changes only with a deploy: read it to "
                    "learn what a session can offer before opening one.",
    )
    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(catalog_body(CATALOG), content_type="application/json")


class SessionsApi(DshApiView):
    @extend_schema(
        operation_id="session_open", request=s.SessionOpenRequest,
        responses={201: s.SessionView, **errors(400, 403, 404)},
        summary="Open an agent session for an account",
        description="Opens an agent session for one account's conversation. `profile` picks the tools the model "
                    "sees (default: the service's default profile); `workspace` names the Agent workspace folder "
                    "the session's tools may read files from. The answer is the session view: the session id that "
                    "every later call names, the tools to offer the model and the prompt to add, with an ETag. "
                    "400: a malformed body or an unknown profile. 403: this client may not open sessions in that "
                    "profile. 404: no such account.",
    )
    def post(self, request: Request) -> HttpResponse:
        data = _validated(s.SessionOpenRequest, request)
        session = session_open(client=_client(request), account=data["account"],
                               profile=data.get("profile"), workspace=data.get("workspace"))
        return session_response(session, status=status.HTTP_201_CREATED)


def _etag_matches(etag: str, if_none_match: str) -> bool:
    """``If-None-Match`` as HTTP compares it (RFC 9110, 13.1.2): weakly, so ``W/"r"`` matches
    ``"r"``, and ``*`` matches the session view, which always exists when it is answered."""
    if not if_none_match:
        return False
    if if_none_match == etag:  # what a client that kept the ETag sends back
        return True
    tags = parse_etags(if_none_match)
    return tags == ["*"] or etag in [tag.removeprefix("W/") for tag in tags]


class SessionApi(DshApiView):
    # The session comes from the authentication's one statement (see DshClientAuthentication).
    session_bound = True

    @extend_schema(
        operation_id="session_view",
        parameters=[OpenApiParameter(
            "If-None-Match", str, OpenApiParameter.HEADER, required=False,
            description="ETags from earlier answers; compared weakly (`W/\"r\"` matches `\"r\"`), and `*` "
                        "matches any current view. A match is `304` with the ETag and no body.")],
        responses={200: s.SessionView, 304: OpenApiResponse(description="Not modified."), **errors(404)},
        summary="The session's tools and prompt, with an ETag",
        description="The session view as it stands: the tools follow the mounted phases, and `revision` (the "
                    "ETag) changes whenever the tools or the prompt do. Send the ETag back in If-None-Match to "
                    "learn without a body that nothing changed (304). 404: an unknown or closed session, or "
                    "another client's.",
    )
    def get(self, request: Request, session: str) -> HttpResponse:
        agent_session = request_session(request)
        toolset = session_toolset(agent_session)
        etag = f'"{toolset.revision}"'
        if _etag_matches(etag, request.headers.get("If-None-Match", "")):
            # A bodiless answer: Django's own skips DRF's rendering of nothing.
            not_modified = HttpResponseNotModified()
            not_modified["ETag"] = etag
            return not_modified
        return session_response(agent_session, toolset=toolset)

    @extend_schema(
        operation_id="session_close", responses={204: None, **errors(404)},
        summary="Close the session; later calls on it are 404",
        description="Ends the session when its conversation ends: the attachments it captured are deleted and "
                    "every later call on it is 404. 404: an unknown or already closed session, or another "
                    "client's.",
    )
    def delete(self, request: Request, session: str) -> Response:
        session_close(client=_client(request), public_id=session)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AttachmentsPhaseApi(DshApiView):
    @extend_schema(
        operation_id="attachments_mount", request=None, responses={200: s.SessionView, **errors(404)},
        summary="Mount the attachments dependency (idempotent)",
        description="Mounts the attachments phase: the tools that work on the user's attachments and their "
                    "guidance join the session, and the answer is the new session view. Mounting again changes "
                    "nothing. 404: an unknown or closed session, or another client's.",
    )
    def put(self, request: Request, session: str) -> HttpResponse:
        agent_session = session_set_attachments(client=_client(request), public_id=session, mounted=True)
        return session_response(agent_session)

    @extend_schema(
        operation_id="attachments_dispose", request=None, responses={200: s.SessionView, **errors(404)},
        summary="Dispose the attachments dependency: its tools and guidance are withdrawn",
        description="Disposes the attachments phase: its tools and guidance leave the session (a call to one of "
                    "them is then 404 `unknown_tool`), and the answer is the new session view. A later mount "
                    "restores them. 404: an unknown or closed session, or another client's.",
    )
    def delete(self, request: Request, session: str) -> HttpResponse:
        agent_session = session_set_attachments(client=_client(request), public_id=session, mounted=False)
        return session_response(agent_session)


def _multipart_fields(request: Request) -> dict[str, Any]:
    """A multipart message as the serializer reads it. Files come only from file parts named
    ``attachments``. What would otherwise be dropped or picked from is refused by name: a text
    part named ``attachments`` (a file sent as text), a file under another name, and a field
    sent more than once."""
    fields, files = request.POST, request.FILES
    refused = {name: ["Sent more than once."] for name in fields if len(fields.getlist(name)) > 1}
    if "attachments" in fields:
        refused["attachments"] = ["Attachments must be file parts."]
    refused.update({name: ["Only attachments may be files."] for name in files if name != "attachments"})
    if refused:
        raise ValidationError(refused)
    payload: dict[str, Any] = {name: fields.get(name) for name in fields}
    payload["attachments"] = files.getlist("attachments")
    return payload


class MessagesApi(DshApiView):
    # The session comes from the authentication's one statement (see DshClientAuthentication).
    session_bound = True
    parser_classes = [StrictJSONParser, CompleteMultiPartParser]

    @extend_schema(
        operation_id="message_record",
        request={"application/json": s.MessageText, "multipart/form-data": s.MessageRequest},
        responses={201: s.MessageRecorded, **errors(400, 404, 409, 413)},
        summary="Record the signed-in user's latest direct message and its attachments",
        description="Records what the signed-in human last typed or attached, never model or tool output: its "
                    "images are the captured attachments a gallery add can use, and its text is where a 确认 "
                    "is read from. Send JSON, or multipart/form-data with the files as `attachments` parts in the "
                    "message's order. 400: a malformed message. 404: an unknown or closed session. 409: this "
                    "message id was recorded before. 413: a file or the body is too large.",
    )
    def post(self, request: Request, session: str) -> Response:
        agent_session = request_session(request)
        payload = _multipart_fields(request) if request.content_type.startswith("multipart/") else request.data
        serializer = s.MessageRequest(data=payload)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        message = message_record(session=agent_session, message_id=data["id"], text=data["text"],
                                 attachments=data["attachments"])
        return Response({"id": message.message_id, "attachments": len(data["attachments"])},
                        status=status.HTTP_201_CREATED)


class PreExecuteApi(DshApiView):
    # The session comes from the authentication's one statement (see DshClientAuthentication).
    session_bound = True

    @extend_schema(
        operation_id="tool_pre_execute", request=s.ArgumentsRequest, parameters=TRACE_HEADERS,
        responses={200: s.PreExecuteDecision, **errors(400, 404)},
        summary="The approval decision for a call: allow, ask or deny",
        description="Asks, before a call runs, whether the human must approve it. `allow`: run it. `ask` (tools "
                    "whose approval is pre-execute): show the card to the human and, if they accept, send the "
                    "`approval` with execute; it is single-use, expires, and holds only for this session, tool "
                    "and these exact arguments. The card lists the `scopes` the human may choose; `allow` also "
                    "answers a call a live standing grant covers. Where the tool's approvals are taken on Arkme's "
                    "own page, `ask` also carries `approval_url`: the human approves there, signed in to Arkme, and "
                    "the approval stays pending until then (see the approval status). `deny`: do not run it; "
                    "`error` says why. Nothing runs here. "
                    "400: malformed arguments. 404: a tool this session does not show, or an unknown session.",
    )
    def post(self, request: Request, session: str, name: str) -> Response:
        agent_session = request_session(request)
        data = _call_request(s.ArgumentsRequest, request)
        call = call_for(client=_client(request), session=agent_session, name=name, arguments=data["arguments"],
                        surface=Surface.REST)
        with transaction.atomic():
            decision = tool_pre_execute(call)
        return Response(decision)


class ApprovalStatusApi(DshApiView):
    # The session comes from the authentication's one statement (see DshClientAuthentication).
    session_bound = True

    @extend_schema(
        operation_id="approval_status", responses={200: s.ApprovalStatusView, **errors(404)},
        summary="Where an approval stands: pending, approved, declined, expired or used",
        description="Lets DSH wait for the human's answer on Arkme's approval page without calling the tool: "
                    "`pending` until the session's account approves or declines there. `{approval}` is the "
                    "`approval` pre-execute gave. An approval not taken on the page reads `approved` until it is "
                    "used or expires. 404: an unknown approval, another session's, or an unknown session.",
    )
    def get(self, request: Request, session: str, approval: str) -> Response:
        return Response({"status": str(approval_status(session=request_session(request), token=approval))})


class ExecuteApi(DshApiView):
    # The session comes from the authentication's one statement (see DshClientAuthentication).
    session_bound = True

    @extend_schema(
        operation_id="tool_execute", request=s.ExecuteRequest,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                                     description="A repeat with the same arguments replays the first response."),
                    *TRACE_HEADERS, RETRY_AFTER],
        responses={200: s.ExecuteResult, **errors(400, 403, 404, 409, 413, 422, 429, 503)},
        summary="Run a tool call",
        description="Runs a call of a tool the session shows; the answer is `{\"result\": …}`, whose type is "
                    "the tool's (each tool also has an operation of its own with its exact result type). A tool "
                    "that needs approval takes the `approval` pre-execute gave, and the `scope` the human chose "
                    "(`session` opens a standing grant; 400 when the card did not offer it), or runs without "
                    "one under a live standing grant. With an Idempotency-Key, a repeat "
                    "with the same arguments answers the first response again and does nothing. 400: malformed "
                    "arguments (`details.fields` names them). 403: `approval_required` (no valid, unused "
                    "approval for these arguments), `approval_pending` (taken on Arkme's page, not answered yet), "
                    "`approval_declined` (declined there), or an object this account may not act on. 404: a "
                    "tool this session does not show, or an unknown session. 409: the state changed (a stale "
                    "revision, an ended operation, a reused Idempotency-Key). 413: too large. 422: content "
                    "refused (an image's size, format or bytes). 429 `throttled`: past a limit on calls per "
                    "client, account or session; nothing was done (an approval stays unused, an "
                    "Idempotency-Key unclaimed), retry after Retry-After seconds. 503: a dependency is "
                    "unavailable (the limits' store, for a write); safe to retry.",
    )
    def post(self, request: Request, session: str, name: str) -> HttpResponse:
        agent_session = request_session(request)
        data = _call_request(s.ExecuteRequest, request)
        call = call_for(client=_client(request), session=agent_session, name=name, arguments=data["arguments"],
                        surface=Surface.REST, idempotency_key=idempotency_key_of(request),
                        approval=data.get("approval"), scope=data.get("scope"))
        outcome = tool_execute(call)
        response = self.rendered(request, outcome.body, outcome.status)
        if outcome.status >= 400:
            for header, value in refusal_headers(outcome.status, outcome.body).items():
                response[header] = value
        return response
