"""Request ids and structured logs.

Every request gets an id: the caller's ``X-Request-ID`` when it is a short, plain token (a
gateway's), else a new one. It is answered in the ``X-Request-ID`` header, put on every log
line written while the request runs and on its tool calls' audit rows, so one id leads from
a host's report to the log and the audit.

Log lines are JSON with a fixed set of fields. Extra attributes a library attaches to a
record (django-mcpz attaches a call's arguments) are never written: arguments, refs, paths
and keys stay out of the logs.
"""
from __future__ import annotations

import contextvars
import logging
import re
import secrets
from typing import Any, Callable

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from pythonjsonlogger.json import JsonFormatter

HEADER = "X-Request-ID"
_ACCEPTED = re.compile(r"[A-Za-z0-9._-]{8,64}")
_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("arkme_request_id", default="")
# The request being served, for ``served_at``: its host is validated only when asked for, not
# on every request (one call in thousands builds a link from it).
_serving: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar("arkme_serving", default=None)


def current_request_id() -> str:
    """The id of the request being served, empty outside one (a task, a command)."""
    return _request_id.get()


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


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        offered = request.headers.get(HEADER, "")
        request_id = offered if _ACCEPTED.fullmatch(offered) else secrets.token_hex(16)
        token = _request_id.set(request_id)
        at = _serving.set(request)
        try:
            response = self.get_response(request)
        finally:
            _request_id.reset(token)
            _serving.reset(at)
        response[HEADER] = request_id
        return response


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


FIELDS = ("asctime", "levelname", "name", "message", "request_id")


class StructuredFormatter(JsonFormatter):
    """One JSON object a line: time, level, logger, message, request id, and the traceback
    when there is one; nothing else a record carries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        super().__init__(list(FIELDS), *args, **kwargs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        for field in FIELDS:
            log_data[self._get_rename(field)] = record.__dict__.get(field)
        for field in ("exc_info", "stack_info"):  # the formatter puts the formatted traceback here
            if message_dict.get(field):
                log_data[field] = message_dict[field]
