"""The embedded default (SQLite) under concurrent requests: a real threaded server on a file
database, parallel writes of every kind, and no ``database is locked`` (no 5xx at all)."""
from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.concurrency import race
from tests.support.live import deployment, free_port

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 3


@pytest.fixture
def server(tmp_path):
    env, world = deployment(tmp_path, DJANGO_DEBUG="1")
    port = free_port()
    process = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield port, world
    process.terminate()
    process.wait(timeout=10)


class Api:
    def __init__(self, port: int, key: str) -> None:
        self.port, self.key = port, key

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        connection.request(method, f"/dsh/v1/{path}", json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        raw = response.read()
        connection.close()
        return response.status, (json.loads(raw) if raw else {})


def test_concurrent_writes_on_sqlite_never_fail(server, figures):
    port, world = server
    api = Api(port, world["dsh_key"])
    alice, extension = world["accounts"]["alice"], world["extensions"]["alice-ext"]
    statuses: list[int] = []

    def collect(outcomes):
        for kind, value in outcomes:
            assert kind == "ok", value
            statuses.append(value[0])
        return [value for _, value in outcomes]

    for round_number in range(ROUNDS):
        opened = collect(race([lambda: api.call("POST", "sessions", {"account": alice, "workspace": "demo"})] * 6))
        sessions = [body["session"] for _, body in opened]
        collect(race([lambda s=s: api.call("PUT", f"sessions/{s}/phases/attachments") for s in sessions]))
        collect(race([lambda s=s: api.call("POST", f"sessions/{s}/tools/arkme_id_change/pre-execute",
                                           {"arguments": {"arkme_id": f"alice_{round_number}"}}) for s in sessions]))
        collect(race([lambda s=s: api.call("POST", f"sessions/{s}/messages", {"id": "m1", "text": "hello"})
                      for s in sessions]))
        # Confirms of one operation at once: exactly one adds the images.
        owner = sessions[0]
        status, prepared = api.call("POST", f"sessions/{owner}/tools/arkme_extension_preview_add/execute", {
            "arguments": {"action": "prepare", "extension": extension, "source": "workspace",
                          "workspace_paths": [f"preview-{n}.png" for n in (1, 2, 3)]}})
        assert status == 200, prepared
        api.call("POST", f"sessions/{owner}/messages", {"id": "m2", "text": "确认"})
        confirm = {"arguments": {"action": "confirm", "extension": extension,
                                 "operation": prepared["result"]["operation"]}}
        confirms = collect(race([lambda: api.call(
            "POST", f"sessions/{owner}/tools/arkme_extension_preview_add/execute", confirm)] * 3))
        assert sorted(status for status, _ in confirms) == [200, 409, 409]
        # Empty the gallery again through the approval flow, then close every session at once.
        gallery = next(status_body for status_body in confirms if status_body[0] == 200)[1]["result"]["gallery"]
        arguments = {"extension": extension, "items": [i["item"] for i in gallery["items"]],
                     "revision": gallery["revision"]}
        _, decision = api.call("POST", f"sessions/{owner}/tools/arkme_extension_preview_delete/pre-execute",
                               {"arguments": arguments})
        assert api.call("POST", f"sessions/{owner}/tools/arkme_extension_preview_delete/execute",
                        {"arguments": arguments, "approval": decision["approval"]})[0] == 200
        collect(race([lambda s=s: api.call("DELETE", f"sessions/{s}") for s in sessions]))
    errors = sum(1 for status in statuses if status >= 500)
    figures.record("sqlite_concurrent_requests", len(statuses))
    figures.record("sqlite_concurrency_errors", errors)
    assert errors == 0
