"""Cancellation: a call whose caller has gone writes nothing.

MCP's Streamable HTTP transport makes a client's disconnect the cancellation of its request,
and a REST caller (DSH) goes away the same way. The door says how to tell whether its caller
is still there (``caller_probe``; the HTTP doors: ``CallerMiddleware``, from the client's
socket); a write service asks (``cancellation_check``) right before its effect commits, inside
the transaction that holds the effect, so that raising rolls the effect back. Reads never ask,
so they pay nothing but a context variable per request.
"""
from __future__ import annotations

import contextvars
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.http import HttpRequest, HttpResponse

from .errors import CallCancelled

Probe = Callable[[], bool]
"""True once the caller is known to have gone."""

_probe: contextvars.ContextVar[Probe | None] = contextvars.ContextVar("arkme_caller_probe", default=None)
# The request's client socket, kept as it is: the probe is made only when a write asks.
_socket: contextvars.ContextVar[socket.socket | None] = contextvars.ContextVar("arkme_caller_socket", default=None)


def caller_gone() -> bool:
    """Whether the current request's caller has gone; False where no door can tell."""
    probe = _probe.get()
    if probe is not None:
        return probe()
    sock = _socket.get()
    return sock is not None and socket_closed(sock)


def cancellation_check() -> None:
    """Raise ``CallCancelled`` when the caller has gone. Called by a write service as the last
    step inside the transaction of its effect: nothing commits for a caller that left."""
    if caller_gone():
        raise CallCancelled()


@contextmanager
def caller_probe(probe: Probe | None) -> Iterator[None]:
    """Run the block with ``probe`` telling whether its caller has gone."""
    token = _probe.set(probe)
    try:
        yield
    finally:
        _probe.reset(token)


def socket_closed(sock: socket.socket) -> bool:
    """Whether the client closed its side of this connection, without reading from it or
    waiting: a peek at the next byte with the socket made non-blocking for the moment (under
    gevent too: a timeout of 0 raises instead of waiting).

    - Nothing to read: the connection is open and idle (the client waits for its answer).
    - Bytes: the rest of this request's body, or the next request of a pipelining client,
      which stay unread for gunicorn: the client is still there.
    - End of stream (``b""``) or a reset: the client closed or dropped the connection. A
      client that shut down only its sending side to wait for the answer looks the same; as
      nginx does, that is taken as gone (HTTP clients do not half-close to wait for an answer).
    """
    try:
        timeout = sock.gettimeout()
        sock.settimeout(0.0)
        try:
            data = sock.recv(1, socket.MSG_PEEK)
        finally:
            sock.settimeout(timeout)
    except (BlockingIOError, InterruptedError):
        return False
    except ValueError:
        return False  # a TLS socket cannot peek; the proxy in front terminates TLS
    except OSError:
        return True  # reset by the peer, or closed
    return data == b""


class CallerMiddleware:
    """Tells each request whether its client is still connected, from the socket gunicorn puts
    in the WSGI environ (``gunicorn.socket``). Without one (the test client, another server)
    nothing is cancelled. The peek runs only where a write asks, never on a read."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _socket.set(request.META.get("gunicorn.socket"))
        try:
            return self.get_response(request)
        finally:
            _socket.reset(token)
