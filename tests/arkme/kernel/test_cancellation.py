"""The client-connection probe behind cancellation: a peek that never waits and never reads."""
from __future__ import annotations

import socket

import pytest

from arkme.kernel.cancellation import caller_gone, caller_probe, cancellation_check, socket_closed
from arkme.kernel.errors import CallCancelled


@pytest.fixture
def pair():
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def test_an_open_idle_connection_is_there(pair):
    server, _ = pair
    assert socket_closed(server) is False
    assert server.gettimeout() is None  # put back as it was


def test_unread_bytes_are_a_client_still_there_and_stay_unread(pair):
    """The rest of a body, or a pipelined next request: gunicorn reads them later."""
    server, client = pair
    client.sendall(b"GET / HTTP/1.1\r\n")
    assert socket_closed(server) is False
    assert server.recv(100) == b"GET / HTTP/1.1\r\n"


def test_a_closed_connection_is_gone(pair):
    server, client = pair
    client.close()
    assert socket_closed(server) is True


def test_a_reset_or_closed_socket_is_gone():
    server, client = socket.socketpair()
    server.close()
    assert socket_closed(server) is True
    client.close()


def test_the_check_raises_only_when_a_probe_says_gone():
    assert caller_gone() is False
    cancellation_check()  # no probe: never cancelled
    with caller_probe(lambda: False):
        cancellation_check()
    with caller_probe(lambda: True), pytest.raises(CallCancelled) as raised:
        cancellation_check()
    assert raised.value.http_status == 499 and raised.value.code == "call_cancelled"
