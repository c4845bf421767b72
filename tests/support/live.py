"""Helpers for tests that run the service (or a service it needs) as a separate process."""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.errors import Answer


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


def answer(port: int, key: str, method: str, path: str, body: dict | None = None) -> Answer:
    """One DSH API call over HTTP, read as a test client's response is (for ``assert_error``)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(method, f"/dsh/v1/{path}", json.dumps(body) if body is not None else None,
                       {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return Answer(response.status, response.headers, raw)


def call(port: int, key: str, method: str, path: str, body: dict | None = None) -> tuple[int, str, dict]:
    """One DSH API call over HTTP: status, content type and the decoded body."""
    answered = answer(port, key, method, path, body)
    content_type = answered.headers.get("Content-Type", "")
    return answered.status_code, content_type, json.loads(answered.content) if answered.content else {}


def gallery_add(port: int, key: str, session: str, extension: str, paths: list[str]) -> dict:
    """Workspace images into an extension's gallery over HTTP: prepare, the human's 确认, and
    confirm; the confirm's result."""
    add = f"sessions/{session}/tools/arkme_extension_preview_add/execute"
    status, _, prepared = call(port, key, "POST", add, {"arguments": {
        "action": "prepare", "extension": extension, "source": "workspace", "workspace_paths": paths}})
    assert status == 200, prepared
    assert call(port, key, "POST", f"sessions/{session}/messages", {"id": "m1", "text": "确认"})[0] == 201
    status, _, confirmed = call(port, key, "POST", add, {"arguments": {
        "action": "confirm", "extension": extension, "operation": prepared["result"]["operation"]}})
    assert status == 200, confirmed
    return confirmed["result"]


ROOT = Path(__file__).resolve().parents[2]


def deployment(folder: Path, **env: str) -> tuple[dict[str, str], dict]:
    """A deployment's environment on a file database in ``folder``, migrated and seeded with the
    demo world; returns the environment and the world (``arkme_demo --json``)."""
    base = {**os.environ, "DATABASE_URL": f"sqlite:///{folder / 'arkme.sqlite3'}", "DJANGO_DEBUG": "",
            "DJANGO_SECRET_KEY": "live-test", "DJANGO_SECURE_COOKIES": "0", "CELERY_BROKER_URL": "",
            "ARKME_MEDIA_ROOT": str(folder / "media"), "ARKME_WORKSPACE_ROOT": str(folder / "workspaces"), **env}
    for args in (("migrate", "--noinput", "-v0"), ("arkme_demo", "--json", "--force")):
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base, capture_output=True,
                              text=True, check=True)
    return base, json.loads(done.stdout)


def gunicorn(env: dict[str, str], *options: str) -> tuple[subprocess.Popen, int]:
    """gunicorn with this repository's config, one worker, on a free port, once it listens."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", *options], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_until_listening(port, process, lambda: "gunicorn did not start", seconds=15)
    return process, port
