"""Request ids and structured logs.

Every request gets an id: the caller's ``X-Request-ID`` when it is a short, plain token (a
gateway's), else a new one. It is answered in the ``X-Request-ID`` header, put on every log
line written while the request runs and on its tool calls' audit rows, so one id leads from
a host's report to the log and the audit.

Log lines are JSON with a fixed set of fields. Extra attributes a library attaches to a
record (django-mcpz attaches a call's arguments) are never written: arguments, refs, paths
and keys stay out of the logs. Our own code adds fields through ``extra={"fields": {...}}``
(an HTTP line's method, route, status), a vocabulary it chooses.

Operators see every answer: the middleware counts each response by method, route and
status class (``arkme_http_requests_total``), and writes each 5xx as exactly one line, with
the exception behind it when there is one (its traceback one field of that line). Django's
own ``django.request`` line for a 5xx is dropped (``ServerErrorsLoggedOnce``): it was a
second line for the same answer, written after the request id was gone.

Paths reach a log only redacted (``redacted_target``): the value of every URL parameter that
is a secret (an invitation's token, a password reset's), any path segment that looks like a
token where no route matched, and every query-string value.
"""
from __future__ import annotations

import contextvars
import logging
import logging.config
import secrets
import sys
import time
from typing import Any, Callable

from django.core.exceptions import DisallowedHost
from django.core.signals import got_request_exception
from django.http import HttpRequest, HttpResponse

from serverlog.format import (  # noqa: F401 - re-exported: the rest of the service imports them from here
    ACCEPTED_REQUEST_ID,
    ENVIRON_REQUEST_ID,
    ENVIRON_ROUTE,
    ENVIRON_TARGET,
    HEADER,
    REDACTED,
    SECRET_PARAMETERS,
    StructuredFormatter,
    redacted_path,
    redacted_query,
    redacted_target,
)

from .metrics import count_response

_ACCEPTED = ACCEPTED_REQUEST_ID
_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("arkme_request_id", default="")
# The request being served, for ``served_at``: its host is validated only when asked for, not
# on every request (one call in thousands builds a link from it).
_serving: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar("arkme_serving", default=None)
# The exception behind the request's 5xx, kept for its one log line (a list: set once per
# request, filled by whoever turned the exception into an answer).
_failures: contextvars.ContextVar[list[BaseException] | None] = contextvars.ContextVar("arkme_failures", default=None)

http_logger = logging.getLogger("arkme.http")

UNMATCHED = "unmatched"


def configure(config: dict[str, Any]) -> None:
    """Django's ``LOGGING_CONFIG``: ``LOGGING`` as ``logging.config.dictConfig`` reads it, and
    Python's warnings through logging too (one JSON line each, not a plain print to stderr)."""
    logging.config.dictConfig(config)
    logging.captureWarnings(True)


def current_request_id() -> str:
    """The id of the request being served, empty outside one (a task, a command)."""
    return _request_id.get()


def bind_request_id(request_id: str) -> contextvars.Token[str]:
    """Make ``request_id`` the current one (a task run for a request); undo with
    ``unbind_request_id``."""
    return _request_id.set(request_id if _ACCEPTED.fullmatch(request_id) else "")


def unbind_request_id(token: contextvars.Token[str]) -> None:
    _request_id.reset(token)


def served_at() -> str:
    """The scheme and host the request being served came to (``http://127.0.0.1:8765``), empty
    outside one, or when the host does not pass ALLOWED_HOSTS (Django answers such a request
    400 before any view runs)."""
    request = _serving.get()
    if request is None:
        return ""
    try:
        return f"{request.scheme}://{request.get_host()}"
    except DisallowedHost:
        return ""


def record_server_error(exc: BaseException) -> None:
    """Keep ``exc`` as the cause of the 5xx the request being served answers: its one log
    line (written by the middleware) carries it. Exception handlers that turn an exception
    into a 5xx call this instead of logging it themselves."""
    failures = _failures.get()
    if failures is not None:
        failures.append(exc)


def _on_request_exception(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """Django's handler caught an exception no view or middleware handled (sent while it is
    being handled)."""
    exc = sys.exc_info()[1]
    if exc is not None:
        record_server_error(exc)


got_request_exception.connect(_on_request_exception, dispatch_uid="arkme.kernel.logs")

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _route(request: HttpRequest) -> str:
    match = request.resolver_match
    return match.route if match is not None and match.route else UNMATCHED


class RequestIdMiddleware:
    """The request's id, its count by route and status class, and its 5xx line. First in
    MIDDLEWARE: Django turns an exception of any middleware or view below into a response
    before it reaches this one (``convert_exception_to_response`` wraps each), so every
    answer passes here, 5xx included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        offered = request.headers.get(HEADER, "")
        request_id = offered if _ACCEPTED.fullmatch(offered) else secrets.token_hex(16)
        request.META[ENVIRON_REQUEST_ID] = request_id
        token = _request_id.set(request_id)
        at = _serving.set(request)
        failures: list[BaseException] = []
        caught = _failures.set(failures)
        started = time.monotonic()
        try:
            response = self.get_response(request)
            self._account(request, response, failures, started)
        finally:
            _request_id.reset(token)
            _serving.reset(at)
            _failures.reset(caught)
        response[HEADER] = request_id
        return response

    @staticmethod
    def _account(request: HttpRequest, response: HttpResponse, failures: list[BaseException], started: float) -> None:
        method = request.method if request.method in _METHODS else "other"
        route = _route(request)
        target = redacted_target(request.path, request.META.get("QUERY_STRING", ""), request.resolver_match)
        request.META[ENVIRON_TARGET] = target
        request.META[ENVIRON_ROUTE] = route
        status = response.status_code
        count_response(str(method), route, status)
        if status < 500:
            return
        exc = failures[-1] if failures else None
        http_logger.error(
            "%s %s answered %s", method, route, status,
            exc_info=(type(exc), exc, exc.__traceback__) if exc is not None else None,
            extra={"fields": {"method": method, "route": route, "path": target, "status": status,
                              "duration_ms": round(1000 * (time.monotonic() - started))}})


class ServerErrorsLoggedOnce(logging.Filter):
    """On ``django.request``: drops the line Django writes for a 5xx, which
    ``RequestIdMiddleware`` writes once, with the exception, the route and the request id."""

    def filter(self, record: logging.LogRecord) -> bool:
        return int(getattr(record, "status_code", 0) or 0) < 500


class RequestIdFilter(logging.Filter):
    """Puts the request id on every record. A record that carries its request (Django's
    ``django.request`` and ``django.security`` lines) gets that request's id even when it is
    written outside the middleware, and the request's path in its message redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = _request_id.get()
        request = getattr(record, "request", None)
        meta = getattr(request, "META", None)
        if isinstance(meta, dict):
            request_id = request_id or str(meta.get(ENVIRON_REQUEST_ID, ""))
            _redact_message(record, request)
        record.request_id = request_id
        return True


def _redact_message(record: logging.LogRecord, request: Any) -> None:
    path = getattr(request, "path", "")
    if not isinstance(path, str) or not path:
        return
    message = record.getMessage()
    redacted = redacted_path(path, getattr(request, "resolver_match", None))
    escaped = path.encode("unicode_escape").decode("ascii")  # as Django's log_response writes it
    cleaned = message.replace(path, redacted).replace(escaped, redacted)
    if cleaned != message:
        record.msg, record.args = cleaned, None
