"""The web process as ``gunicorn.conf.py`` deploys it (gevent workers): what runs beside the
request loop works there too, and a client connection leaves no database connection behind."""
from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support import images
from tests.support.live import call, deployment, gallery_add, gunicorn, listening
from tests.support.services import require_service

POSTGRES = os.environ.get("DATABASE_URL", "") if os.environ.get("DATABASE_URL", "").startswith("postgres") \
    else "postgres://postgres@127.0.0.1:5432/postgres"


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, json.loads(body)


@pytest.fixture
def served(tmp_path):
    env, world = deployment(tmp_path, DJANGO_ALLOWED_HOSTS="127.0.0.1")
    process, port = gunicorn(env)
    try:
        yield port, world, Path(env["ARKME_WORKSPACE_ROOT"])
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_readiness_runs_its_checks_beside_the_request_loop(served):
    """django-health-check runs an event loop and hands its checks to an executor's threads;
    under gevent those must be real threads, or Django refuses the checks' database calls."""
    port, _, _ = served
    assert _get(port, "/readyz") == (200, {"status": "ready", "checks": {
        "Database": "OK", "Storage": "OK", "Migrations": "OK"}})


def test_a_gallery_flow_decodes_renders_and_stores_under_the_deployed_worker(served):
    """A turned photograph (decoded and re-encoded on the offload threads) and an SVG (rendered
    by the process's render pool, in-process tasks) through prepare, 确认 and confirm."""
    port, world, workspaces = served
    key = world["dsh_key"]
    folder = workspaces / "deployed"
    folder.mkdir(parents=True)
    (folder / "photo.jpg").write_bytes(images.jpeg_with_gps_and_orientation())
    (folder / "drawing.svg").write_bytes(images.svg())
    status, _, opened = call(port, key, "POST", "sessions", {"account": world["accounts"]["alice"],
                                                             "workspace": "deployed"})
    assert status == 201, opened
    session = opened["session"]
    assert call(port, key, "PUT", f"sessions/{session}/phases/attachments")[0] == 200
    confirmed = gallery_add(port, key, session, world["extensions"]["alice-ext"], ["photo.jpg", "drawing.svg"])
    assert confirmed["added"] == 2


def test_a_connection_with_requests_waiting_does_not_keep_the_process_to_itself(served):
    """One client pipelines many requests, so its next one is always in the socket already;
    another client's request, sent just after, is answered long before the first's last."""
    port = served[0]
    many = 300
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as busy, socket.create_connection(("127.0.0.1", port)) as other:
        busy.sendall(request * many)
        other.sendall(request)
        other.settimeout(60)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            answer += other.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")
        busy.setblocking(False)
        received = b""
        try:
            while chunk := busy.recv(1 << 20):
                received += chunk
        except BlockingIOError:
            pass
        assert received.count(b"HTTP/1.1 200") < many // 2, "the other client waited for all of the first's requests"
        busy.setblocking(True)
        busy.settimeout(60)
        while received.count(b"HTTP/1.1 200") < many:  # and the first client is answered in full
            received += busy.recv(1 << 20)


def _admin(sql: str, *params: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(urlunsplit(urlsplit(POSTGRES)._replace(path="/postgres")), autocommit=True) as connection:
        cursor = connection.execute(sql, params or None)
        return cursor.fetchall() if cursor.description else []


@pytest.mark.postgres
def test_client_connections_hold_no_database_connection(tmp_path):
    """Database connections belong to requests: a process keeps a pool of them, and clients
    that stay connected between requests hold none, so twenty kept-alive clients of one
    process cost PostgreSQL no more than the pool's size."""
    require_service("PostgreSQL", listening(5432), "PostgreSQL on 127.0.0.1:5432")
    database = f"arkme_worker_{os.getpid()}"
    _admin(f"DROP DATABASE IF EXISTS {database}")
    _admin(f"CREATE DATABASE {database}")
    env, world = deployment(tmp_path, DATABASE_URL=urlunsplit(urlsplit(POSTGRES)._replace(path=f"/{database}")),
                            DATABASE_POOL_MIN_SIZE="1", DATABASE_POOL_MAX_SIZE="3")
    process, port = gunicorn(env)

    def backends() -> int:
        return _admin("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", database)[0][0]

    try:
        headers = {"Authorization": f"Bearer {world['dsh_key']}"}
        clients = [http.client.HTTPConnection("127.0.0.1", port, timeout=60) for _ in range(20)]
        for _ in range(2):  # twenty connections at once, each kept alive over two requests
            for client in clients:
                client.request("GET", "/dsh/v1/catalog", headers=headers)
                response = client.getresponse()
                assert response.status == 200, response.read()
                response.read()
        assert 1 <= backends() <= 3  # the pool's, however many clients stay connected
        for client in clients:
            client.close()
        for _ in range(4):  # and clients that come for one request and go
            assert _get(port, "/dsh/v1/catalog", headers)[0] == 200
        assert backends() <= 3
    finally:
        process.terminate()
        process.wait(timeout=30)
        _admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")

