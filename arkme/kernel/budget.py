"""One total wait budget per request for everything it waits on (task answers).

The web worker is killed at its timeout (gunicorn.conf.py); a request that waited on a slow
queue past it would leave the client a dropped connection. Every wait takes what is left of
the request's budget instead of its own full timeout, and none starts once it is spent. A task
the request waits for carries the same deadline (``arkme.kernel.tasking``), so a worker discards
it, or cuts it short, once its caller has stopped waiting.
"""
from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from typing import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("arkme_request_deadline", default=None)


def remaining(limit: float) -> float:
    """The seconds a wait may take now: ``limit``, cut to what the request has left."""
    deadline = _deadline.get()
    return limit if deadline is None else min(limit, deadline - time.monotonic())


class RequestBudgetMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _deadline.set(time.monotonic() + settings.ARKME_REQUEST_BUDGET_SECONDS)
        try:
            return self.get_response(request)
        finally:
            _deadline.reset(token)


@contextlib.contextmanager
def budget_renewed() -> Iterator[None]:
    """A whole budget again for the block: the work a streaming response does after a wait of
    its own that is bounded otherwise (an MCP call that waited for its human's answer)."""
    token = _deadline.set(time.monotonic() + settings.ARKME_REQUEST_BUDGET_SECONDS)
    try:
        yield
    finally:
        _deadline.reset(token)
