"""Calling the WSGI application directly from a test."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator


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
