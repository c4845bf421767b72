"""What a log line is, without Django: the JSON formatter and the redaction of request paths.

Imported by gunicorn's master (``serverlog.web``, its ``logger_class``), where nothing of
Django may be imported before gevent patches the worker (gunicorn.conf.py), and re-exported
by ``arkme.kernel.logs``.
"""
from __future__ import annotations

import logging
import re
from typing import Any

from pythonjsonlogger.json import JsonFormatter

HEADER = "X-Request-ID"
ACCEPTED_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")

# Keys of the WSGI environ (``request.META`` is the environ itself) that the server's access
# log reads after the response: the id and the redacted path and route.
ENVIRON_REQUEST_ID = "arkme.request_id"
ENVIRON_TARGET = "arkme.target"
ENVIRON_ROUTE = "arkme.route"

REDACTED = "[redacted]"
# URL parameters whose value is a secret: an invitation's token (groups/urls.py), a password
# reset's (django.contrib.auth.urls). tests/arkme/test_logs.py walks every URL pattern and
# fails on a parameter named like a secret that is not here.
SECRET_PARAMETERS = frozenset({"token", "uidb64", "key", "secret", "approval", "signature", "handle"})
# Where no route matched, a path segment that could be a token: a long run of a token's
# alphabet (token_urlsafe(32) is 43 characters).
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_\-.~%=]{20,}")


def redacted_path(path: str, match: Any = None) -> str:
    """``path`` with the values of its secret URL parameters (by the route that matched it),
    or, without a match, every token-like segment, replaced by ``[redacted]``."""
    if match is not None:
        secret = {str(value) for name, value in match.kwargs.items() if name in SECRET_PARAMETERS}
        if not secret:
            return path
        return "/".join(REDACTED if part in secret else part for part in path.split("/"))
    return "/".join(REDACTED if _TOKEN_LIKE.fullmatch(part) else part for part in path.split("/"))


def redacted_query(query: str) -> str:
    """Every value of a query string replaced (names kept): a key, a token or a signature
    may sit in any of them, and none is needed to read a log."""
    if not query:
        return ""
    return "&".join(part.split("=", 1)[0] + ("=" + REDACTED if "=" in part else "") for part in query.split("&"))


def redacted_target(path: str, query: str = "", match: Any = None) -> str:
    """The request's path and query as a log may show them."""
    query = redacted_query(query)
    return redacted_path(path, match) + (f"?{query}" if query else "")


FIELDS = ("asctime", "levelname", "name", "message", "request_id")
# The fields our own code may add (``extra={"fields": {...}}``): a closed list, so a typo or
# an argument cannot become a field.
EXTRA_FIELDS = frozenset({"method", "route", "path", "status", "bytes", "duration_ms", "remote", "pid",
                          "task", "task_id", "context"})


class StructuredFormatter(JsonFormatter):
    """One JSON object a line: time, level, logger, message, request id, and the traceback
    when there is one; nothing else a record carries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        super().__init__(list(FIELDS), *args, **kwargs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        for field in FIELDS:
            log_data[self._get_rename(field)] = record.__dict__.get(field)
        if not log_data.get("request_id"):
            log_data["request_id"] = ""
        extra = record.__dict__.get("fields")
        if isinstance(extra, dict):
            for key, value in extra.items():
                if key in EXTRA_FIELDS:
                    log_data[key] = value
        for field in ("exc_info", "stack_info"):  # the formatter puts the formatted traceback here
            if message_dict.get(field):
                log_data[field] = message_dict[field]
