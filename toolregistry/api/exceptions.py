"""The one exception handler of the DSH API: every error leaves as the same envelope."""
from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response

from arkme.errors import ArkmeError

logger = logging.getLogger("arkme.api")


def _fields(detail, prefix: str = "") -> list[str]:
    if isinstance(detail, dict):
        names: list[str] = []
        for key, value in detail.items():
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


def envelope(code: str, message: str, status: int, details: dict | None = None, headers=None) -> Response:
    error = {"code": code, "message": message}
    if details:
        error["details"] = details
    return Response({"error": error}, status=status, headers=headers)


def dsh_exception_handler(exc, context) -> Response:
    if isinstance(exc, ArkmeError):
        headers = {"WWW-Authenticate": 'Bearer realm="dsh"'} if exc.http_status == 401 else None
        return Response(exc.as_envelope(), status=exc.http_status, headers=headers)
    if isinstance(exc, drf.ValidationError):
        fields = _fields(exc.detail) or ["body"]
        return envelope("invalid_request", "Invalid request: " + ", ".join(fields) + ".", 400, {"fields": fields})
    if isinstance(exc, drf.ParseError):
        return envelope("malformed_request", "The request body could not be parsed.", 400)
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        return envelope("not_authenticated", "A valid client key is required.", 401,
                        headers={"WWW-Authenticate": 'Bearer realm="dsh"'})
    if isinstance(exc, (drf.PermissionDenied, PermissionDenied)):
        return envelope("forbidden", "This is not allowed.", 403)
    if isinstance(exc, (drf.NotFound, Http404)):
        return envelope("not_found", "Not found.", 404)
    if isinstance(exc, drf.MethodNotAllowed):
        return envelope("method_not_allowed", "This method is not allowed here.", 405)
    if isinstance(exc, drf.NotAcceptable):
        return envelope("not_acceptable", "Only application/json responses are offered.", 406)
    if isinstance(exc, drf.UnsupportedMediaType):
        return envelope("unsupported_media_type", "This content type is not accepted here.", 415)
    if isinstance(exc, drf.Throttled):
        return envelope("throttled", "Too many requests.", 429)
    if isinstance(exc, RequestDataTooBig):
        return envelope("payload_too_large", "The request body is too large.", 413)
    if isinstance(exc, SuspiciousOperation):
        return envelope("invalid_request", "The request is malformed.", 400)
    if isinstance(exc, drf.APIException):
        return envelope("error", "The request could not be completed.", exc.status_code)
    logger.exception("unhandled error in the DSH API", exc_info=exc)
    return envelope("internal_error", "Something went wrong on our side.", 500)


def _is_api(request) -> bool:
    return request.path.startswith("/dsh/")


def not_found(request, exception=None):
    """JSON under the DSH API, Django's page elsewhere."""
    if _is_api(request):
        return JsonResponse({"error": {"code": "not_found", "message": "Not found."}}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse(
            {"error": {"code": "internal_error", "message": "Something went wrong on our side."}}, status=500
        )
    return defaults.server_error(request)
