"""A database that is down, hangs or drops a connection is a 503 ``database_unavailable``
on every door, never a 500: the one place that tells an outage from a bug.

An outage is what the driver raises when it cannot reach, keep or use the server: a refused
or lost connection, a connect or pool timeout, the server shutting down, out of connections
or of resources, a statement cancelled by ``statement_timeout``, a lock or serialization
wait that gave up. Everything else the database answers (an ``IntegrityError``, a
``ProgrammingError``, SQLite's "no such table") is a bug or a rule and stays what it is.

Nothing here keeps a connection: Django opens a new one on the next request, so the service
heals by itself when the database returns.

The DSH API's exception handler, the MCP tool call and :class:`OutageMiddleware` (every
other view) ask :func:`outage_error`; the 500 handler asks :func:`current_outage` for what
was raised in another middleware (a browser session saved on the way out).
"""
from __future__ import annotations

import sqlite3
import sys
from typing import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.template import loader

from .errors import RETRY_AFTER_SECONDS, DatabaseUnavailable, DependencyUnavailable
from .logs import record_server_error

try:  # Django's connection pool (OPTIONS["pool"]) raises it when no connection comes in time.
    from psycopg_pool import PoolTimeout

    _POOL_ERRORS: tuple[type[Exception], ...] = (PoolTimeout,)
except ImportError:  # pragma: no cover - the pool is an optional extra of psycopg
    _POOL_ERRORS = ()

DATABASE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError, *_POOL_ERRORS)

# SQLSTATE classes of a server that cannot serve now: 08 connection exception, 40 transaction
# rollback (serialization failure, deadlock), 53 insufficient resources (too many connections,
# disk full), 57 operator intervention (query cancelled, shutting down, starting up); and
# 55P03, a lock not available in time. 54 (a program limit) and the rest are not outages.
_OUTAGE_CLASSES = frozenset({"08", "40", "53", "57"})
_OUTAGE_STATES = frozenset({"55P03"})
# SQLite's own words for a database it cannot use now (every other OperationalError of
# sqlite3 is a schema or SQL error).
_SQLITE_OUTAGES = ("database is locked", "database table is locked", "unable to open database", "disk i/o error")


def is_database_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database is unreachable or cannot serve now (not a bug)."""
    if not isinstance(exc, DATABASE_ERRORS):
        return False
    # Django re-raises the driver's error as its own, the driver's as the cause.
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(cause, sqlite3.Error):
        return isinstance(cause, sqlite3.OperationalError) and str(cause).lower().startswith(_SQLITE_OUTAGES)
    sqlstate = getattr(cause, "sqlstate", None)
    if not sqlstate:
        # No answer from a server: refused, lost, timed out, closed, or a pool that gave none.
        return True
    return sqlstate[:2] in _OUTAGE_CLASSES or sqlstate in _OUTAGE_STATES


def outage_error(exc: BaseException) -> DatabaseUnavailable | None:
    """The domain error an outage is, or None for anything else. The outage is kept as the
    cause of the request's one 5xx log line (``arkme.kernel.logs``)."""
    if not is_database_outage(exc):
        return None
    record_server_error(exc)
    return DatabaseUnavailable()


def outage_summary(exc: BaseException) -> str:
    """The driver's class and first line ("connection ... failed: Connection refused"), for a
    log line: no credential, no statement."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return f"{type(cause).__name__}: {next(iter(str(cause).strip().splitlines()), '')}"


def current_outage() -> DatabaseUnavailable | None:
    """The outage being handled now (inside Django's 500 handler), or None."""
    exc = sys.exc_info()[1]
    return outage_error(exc) if exc is not None else None


def unavailable_response(request: HttpRequest, error: DependencyUnavailable) -> HttpResponse:
    """The 503 of a door: the error envelope on the machine paths (the DSH API, its MCP
    endpoints, the probes), a small HTML page a person can read elsewhere. Neither touches
    the database. ``Retry-After`` says when trying again is worth it."""
    if request.path_info.startswith(tuple(settings.ARKME_MACHINE_PATHS)):
        response: HttpResponse = JsonResponse(error.as_envelope(), status=error.http_status)
    else:
        page = loader.get_template("503.html").render({"message": error.message})
        response = HttpResponse(page, status=error.http_status, content_type="text/html; charset=utf-8")
    response["Retry-After"] = RETRY_AFTER_SECONDS
    return response


class OutageMiddleware:
    """A view that met a database outage answers its door's 503 (DRF views have answered
    already, through the DSH exception handler)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        error = outage_error(exception)
        return None if error is None else unavailable_response(request, error)
