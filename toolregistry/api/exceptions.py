"""The one exception handler of the DSH API: every error leaves as the same envelope."""
from __future__ import annotations

import logging
import math
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.core.exceptions import (
    DisallowedHost,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFilesSent,
)
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django_mcpz.jsonrpc import INVALID_REQUEST, error_response
from rest_framework import exceptions as drf
from rest_framework.response import Response

from arkme.kernel.errors import ArkmeError, ErrorCode, refusal_headers
from arkme.kernel.logs import record_server_error
from arkme.kernel.outages import current_outage, outage_error, unavailable_response

logger = logging.getLogger("arkme.api")


def _fields(detail: Any, prefix: str = "") -> list[str]:
    if isinstance(detail, dict):
        names: list[str] = []
        for key, value in detail.items():
            # A list field's errors come keyed by index: named as the contract names an
            # argument's item, attachments[0].
            if isinstance(key, int):
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                name = prefix or "body"
            nested = _fields(value, name) if isinstance(value, (dict, list)) and any(
                isinstance(v, (dict, list)) for v in (value.values() if isinstance(value, dict) else value)
            ) else []
            names.extend(nested or [name])
        return names
    if isinstance(detail, list):
        names = []
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)):
                names.extend(_fields(value, f"{prefix}[{index}]"))
        return names
    return []


def envelope(code: ErrorCode, message: str, status: int, details: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> Response:
    """A refusal the framework raised, in the envelope and with the headers every refusal has."""
    body = _envelope(code, message, details)
    return Response(body, status=status, headers=headers or refusal_headers(status, body))


def _envelope(code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return ArkmeError(message, code=code, details=details).as_envelope()


def dsh_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, ArkmeError):
        body = exc.as_envelope()
        return Response(body, status=exc.http_status, headers=refusal_headers(exc.http_status, body))
    if isinstance(exc, drf.ValidationError):
        fields = _fields(exc.detail) or ["body"]
        return envelope(ErrorCode.INVALID_REQUEST, "Invalid request: " + ", ".join(fields) + ".", 400, {"fields": fields})
    if isinstance(exc, drf.ParseError):
        return envelope(ErrorCode.MALFORMED_REQUEST, "The request body could not be parsed.", 400)
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        return envelope(ErrorCode.NOT_AUTHENTICATED, "A valid client key is required.", 401)
    if isinstance(exc, (drf.PermissionDenied, PermissionDenied)):
        return envelope(ErrorCode.FORBIDDEN, "This is not allowed.", 403)
    if isinstance(exc, (drf.NotFound, Http404)):
        return envelope(ErrorCode.NOT_FOUND, "Not found.", 404)
    if isinstance(exc, drf.MethodNotAllowed):
        return envelope(ErrorCode.METHOD_NOT_ALLOWED, "This method is not allowed here.", 405)
    if isinstance(exc, drf.NotAcceptable):
        return envelope(ErrorCode.NOT_ACCEPTABLE, "Only application/json responses are offered.", 406)
    if isinstance(exc, drf.UnsupportedMediaType):
        return envelope(ErrorCode.UNSUPPORTED_MEDIA_TYPE, "This content type is not accepted here.", 415)
    if isinstance(exc, drf.Throttled):
        seconds = getattr(exc, "wait", None)  # set by DRF from the throttle; not in its stubs
        wait = math.ceil(seconds) if seconds is not None else 1
        return envelope(ErrorCode.THROTTLED, "Too many requests.", 429, {"retry_after_seconds": max(1, wait)})
    if isinstance(exc, RequestDataTooBig):
        return envelope(ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.", 413)
    if isinstance(exc, TooManyFilesSent):
        # Django counts the files while it parses, before the message's own check can.
        return envelope(ErrorCode.TOO_MANY_ATTACHMENTS,
                        f"A message may have at most {settings.ARKME_MESSAGE_MAX_ATTACHMENTS} attachments.", 400,
                        {"fields": ["attachments"]})
    if isinstance(exc, SuspiciousOperation):
        return envelope(ErrorCode.INVALID_REQUEST, "The request is malformed.", 400)
    if isinstance(exc, drf.APIException):
        return envelope(ErrorCode.ERROR, "The request could not be completed.", exc.status_code)
    outage = outage_error(exc)  # authentication reads the database too
    if outage is not None:
        body = outage.as_envelope()
        return Response(body, status=outage.http_status, headers=refusal_headers(outage.http_status, body))
    # Its one log line, with the traceback, is the request's 5xx line (arkme.kernel.logs).
    record_server_error(exc)
    return envelope(ErrorCode.INTERNAL_ERROR, "Something went wrong on our side.", 500)


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/dsh/")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """What Django refuses before a view runs (a Host header it does not serve, a body past
    its limit): the envelope under the DSH API, a JSON-RPC error on an MCP endpoint, Django's
    page elsewhere."""
    if not _is_api(request):
        return defaults.bad_request(request, exception or SuspiciousOperation())
    if isinstance(exception, RequestDataTooBig):
        code, message, status = ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.", 413
    elif isinstance(exception, DisallowedHost):
        code, message, status = ErrorCode.INVALID_REQUEST, "The Host header names a host this service does not serve.", 400
    else:
        code, message, status = ErrorCode.INVALID_REQUEST, "The request is malformed.", 400
    if request.path.endswith("/mcp"):
        return error_response(None, INVALID_REQUEST, message, status=HTTPStatus(status))
    return JsonResponse(_envelope(code, message), status=status)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """JSON under the DSH API, Django's page elsewhere."""
    if _is_api(request):
        return JsonResponse(_envelope(ErrorCode.NOT_FOUND, "Not found."), status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """What escaped every view and middleware: a database outage met outside a view (a
    browser session saved on the way out) is still the door's 503."""
    outage = current_outage()
    if outage is not None:
        return unavailable_response(request, outage)
    if _is_api(request):
        return JsonResponse(_envelope(ErrorCode.INTERNAL_ERROR, "Something went wrong on our side."), status=500)
    return defaults.server_error(request)
