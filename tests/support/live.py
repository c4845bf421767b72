"""Helpers for tests that run the service (or a service it needs) as a separate process."""
from __future__ import annotations

import http.client
import json
import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int, timeout: float = 1) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def wait_until_listening(port: int, process: subprocess.Popen, why: Callable[[], str] = str,
                         seconds: float = 60) -> None:
    """Until something listens on ``port``; fails with ``why()`` if the process exits first."""
    deadline = time.monotonic() + seconds
    while not listening(port, timeout=0.5):
        assert process.poll() is None and time.monotonic() < deadline, why()
        time.sleep(0.1)


def call(port: int, key: str, method: str, path: str, body: dict | None = None) -> tuple[int, str, dict]:
    """One DSH API call over HTTP: status, content type and the decoded body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(method, f"/dsh/v1/{path}", json.dumps(body) if body is not None else None,
                       {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return response.status, response.getheader("Content-Type", ""), json.loads(raw) if raw else {}
