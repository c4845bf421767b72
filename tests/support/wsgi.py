"""Calling the WSGI application directly from a test."""
from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator


def environ(method: str, path: str, body: bytes = b"", **headers: str) -> dict:
    """What gunicorn hands the application for a request with a declared length; ``headers``
    as WSGI names them (``HTTP_AUTHORIZATION``, ``CONTENT_TYPE``)."""
    return {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
            "wsgi.multiprocess": True, "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)), **headers}


@contextlib.contextmanager
def requests_keep_the_connection() -> Iterator[None]:
    """Like Django's test client: a request must not close the test's connection (and with it
    the test's transaction) when it ends. The test client reconnects this handler after each of
    its own requests, so this wraps only the direct calls."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
