"""The web server's own output as the service's JSON lines: gunicorn's access and error logs,
and the errors gevent's hub reports.

``gunicorn.conf.py`` names ``JsonLogger`` as gunicorn's ``logger_class``. Its access line
is one JSON object with the method, the redacted path (``arkme.kernel.logs.redacted_target``:
an invitation's token never reaches a log), the status, the bytes sent, the duration and the
request id the response carried: ``RequestIdMiddleware`` leaves the id, the redacted path and
the route in the WSGI environ, which gunicorn hands to its access log after the response.
A request that never reached Django (a malformed request line) has its path redacted here.

gevent's hub prints the exception of a greenlet or thread-pool task that nobody handled to
stderr, a multi-line traceback. ``LoggingHub.print_exception`` writes it as one JSON line
on the ``gevent.hub`` logger instead, the traceback one field of it; ``install_logging_hub``
makes it the hub of every thread of the process (gunicorn's ``post_fork``).
"""
from __future__ import annotations

import logging
import os
from typing import Any

from gevent.hub import Hub
from gunicorn.glogging import Logger  # type: ignore[import-untyped]

# Nothing of Django or of the application: gunicorn's master imports this module.
from .format import ENVIRON_REQUEST_ID, ENVIRON_ROUTE, ENVIRON_TARGET, HEADER, StructuredFormatter, redacted_target


class _RedactArguments(logging.Filter):
    """gunicorn names a request by its raw URI in its error lines ("Error handling request
    /groups/join/<token>"): every argument that is a path is redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(_redact_uri(arg) if isinstance(arg, str) and arg.startswith("/") else arg
                                for arg in record.args)
        return True


def _redact_uri(uri: str) -> str:
    path, _, query = uri.partition("?")
    return redacted_target(path, query)


class JsonLogger(Logger):
    """gunicorn's logger with JSON lines (``logger_class``)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(StructuredFormatter())
                handler.addFilter(_RedactArguments())

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        try:
            status = resp.status_code if hasattr(resp, "status_code") else int(str(resp.status).split(None, 1)[0])
            target = environ.get(ENVIRON_TARGET) or _redact_uri(str(environ.get("RAW_URI", "")))
            request_id = environ.get(ENVIRON_REQUEST_ID) or _response_request_id(resp)
            method = str(environ.get("REQUEST_METHOD", "-"))
            fields = {"method": method, "path": target, "status": status,
                      "bytes": getattr(resp, "sent", None),
                      "duration_ms": request_time.seconds * 1000 + request_time.microseconds // 1000,
                      "remote": environ.get("REMOTE_ADDR", "-")}
            if ENVIRON_ROUTE in environ:
                fields["route"] = environ[ENVIRON_ROUTE]
            self.access_log.info("%s %s %s", method, target, status,
                                 extra={"fields": fields, "request_id": request_id})
        except Exception:
            self.error_log.exception("the access line could not be written")


def _response_request_id(resp: Any) -> str:
    for name, value in getattr(resp, "headers", None) or []:
        if str(name).lower() == HEADER.lower():
            return str(value)
    return ""


hub_logger = logging.getLogger("gevent.hub")


class LoggingHub(Hub):
    """gevent's hub, reporting unhandled exceptions as one log line (not a stderr print)."""

    def print_exception(self, context: Any, t: Any, v: Any, tb: Any) -> None:
        if t is None:
            return
        try:
            where = context if isinstance(context, str) else self.format_context(context)
        except Exception:
            where = repr(context)
        hub_logger.error("%s failed with %s", where, getattr(t, "__name__", "exception"),
                         exc_info=(t, v, tb), extra={"fields": {"context": str(where)[:200], "pid": os.getpid()}})


def install_logging_hub() -> None:
    """Every hub created in this process from now on is a ``LoggingHub`` (gevent's default
    hub class, which each new thread's hub is made of); the current thread's, if it already
    has one, reports through logging too."""
    # gevent.hub's own name for it (the stubs miss it), not its internal _hub_local module.
    from gevent.hub import get_hub, set_default_hub_class  # type: ignore[attr-defined]

    set_default_hub_class(LoggingHub)
    hub = get_hub()  # the worker's, which gevent's worker made before this hook runs
    if not isinstance(hub, LoggingHub):
        hub.print_exception = LoggingHub.print_exception.__get__(hub)  # type: ignore[method-assign]
