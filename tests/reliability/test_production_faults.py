"""Waiting on Celery inside a web request, under a real gunicorn: a stopped worker and an
unreachable broker are the contract's JSON 503, answered before gunicorn kills the worker."""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import images
from tests.support.services import require_service

ROOT = Path(__file__).resolve().parents[2]
BUDGET, WORKER_TIMEOUT = 3, 8  # scaled down from 25 and 30: the order is what matters
REDIS_DB = "redis://127.0.0.1:6379/14"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
        return True
    except OSError:
        return False


@pytest.fixture
def deployed(tmp_path):
    """The demo world on a file database, served by gunicorn with this repository's config."""
    base = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'arkme.sqlite3'}", "DJANGO_DEBUG": "",
            "DJANGO_SECRET_KEY": "production-fault-test", "DJANGO_SECURE_COOKIES": "0",
            "ARKME_MEDIA_ROOT": str(tmp_path / "media"), "ARKME_WORKSPACE_ROOT": str(tmp_path / "workspaces"),
            "ARKME_REQUEST_BUDGET_SECONDS": str(BUDGET), "CELERY_BROKER_URL": ""}
    manage = lambda *args: subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base,  # noqa: E731
                                          capture_output=True, text=True, check=True)
    manage("migrate", "--noinput", "-v0")
    world = json.loads(manage("arkme_demo", "--json", "--force").stdout)
    (tmp_path / "workspaces" / "demo" / "logo.svg").write_bytes(images.svg())
    servers = []

    def serve(broker: str) -> int:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "arkme.wsgi", "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
             "--timeout", str(WORKER_TIMEOUT), "--workers", "1"],
            cwd=ROOT, env={**base, "CELERY_BROKER_URL": broker}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        servers.append(process)
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return port
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("gunicorn did not start")

    yield world, serve
    for process in servers:
        process.terminate()
        process.wait(timeout=15)


def call(port: int, key: str, method: str, path: str, body: dict | None = None) -> tuple[int, str, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(method, f"/dsh/v1/{path}", json.dumps(body) if body is not None else None,
                       {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return response.status, response.getheader("Content-Type", ""), json.loads(raw) if raw else {}


def prepare_svg(port: int, world: dict) -> tuple[int, str, dict]:
    key = world["dsh_key"]
    _, _, opened = call(port, key, "POST", "sessions", {"account": world["accounts"]["alice"], "workspace": "demo"})
    session = opened["session"]
    call(port, key, "PUT", f"sessions/{session}/phases/attachments")
    return call(port, key, "POST", f"sessions/{session}/tools/arkme_extension_preview_add/execute", {"arguments": {
        "action": "prepare", "extension": world["extensions"]["alice-ext"], "source": "workspace",
        "workspace_paths": ["logo.svg"]}})


def test_a_stopped_worker_is_a_json_503_within_the_request_budget(deployed, figures):
    require_service("Redis", redis_up(), "redis-server on 127.0.0.1:6379")
    subprocess.run(["redis-cli", "-n", "14", "flushdb"], capture_output=True)
    world, serve = deployed
    status, content_type, body = prepare_svg(serve(REDIS_DB), world)  # nobody consumes the render task
    subprocess.run(["redis-cli", "-n", "14", "flushdb"], capture_output=True)
    assert (status, content_type) == (503, "application/json"), body
    assert body["error"]["code"] == "task_queue_unavailable"
    figures.add("production_faults_answered_503")


def test_an_unreachable_broker_is_a_json_503(deployed, figures):
    world, serve = deployed
    status, content_type, body = prepare_svg(serve("redis://127.0.0.1:1/0"), world)
    assert (status, content_type) == (503, "application/json"), body
    assert body["error"]["code"] == "task_queue_unavailable"
    figures.add("production_faults_answered_503")
