"""Waiting on Celery inside a web request, under a real gunicorn: a stopped worker and an
unreachable broker are the contract's JSON 503, answered before gunicorn kills the worker."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import images
from tests.support.errors import Answer, assert_error
from tests.support.live import answer, call, deployment, gunicorn, listening
from tests.support.services import require_service

ROOT = Path(__file__).resolve().parents[2]
BUDGET, WORKER_TIMEOUT = 3, 8  # scaled down from 25 and 30: the order is what matters
REDIS_DB = "redis://127.0.0.1:6379/14"


def redis_up() -> bool:
    return listening(6379)


@pytest.fixture
def deployed(tmp_path):
    """The demo world on a file database, served by gunicorn with this repository's config."""
    base, world = deployment(tmp_path, DJANGO_SECRET_KEY="production-fault-test",
                             ARKME_REQUEST_BUDGET_SECONDS=str(BUDGET))
    (tmp_path / "workspaces" / "demo" / "logo.svg").write_bytes(images.svg())
    servers = []

    def serve(broker: str, **env: str) -> int:
        process, port = gunicorn({**base, "CELERY_BROKER_URL": broker, **env}, "--timeout", str(WORKER_TIMEOUT))
        servers.append(process)
        return port

    yield world, serve
    for process in servers:
        process.terminate()
        process.wait(timeout=15)


def prepare_svg(port: int, world: dict) -> Answer:
    key = world["dsh_key"]
    _, _, opened = call(port, key, "POST", "sessions", {"account": world["accounts"]["alice"], "workspace": "demo"})
    session = opened["session"]
    call(port, key, "PUT", f"sessions/{session}/phases/attachments")
    return answer(port, key, "POST", f"sessions/{session}/tools/arkme_extension_preview_add/execute", {"arguments": {
        "action": "prepare", "extension": world["extensions"]["alice-ext"], "source": "workspace",
        "workspace_paths": ["logo.svg"]}})


def test_a_stopped_worker_is_a_json_503_within_the_request_budget(deployed, figures):
    require_service("Redis", redis_up(), "redis-server on 127.0.0.1:6379")
    subprocess.run(["redis-cli", "-n", "14", "flushdb"], capture_output=True)
    world, serve = deployed
    answered = prepare_svg(serve(REDIS_DB), world)  # nobody consumes the render task
    subprocess.run(["redis-cli", "-n", "14", "flushdb"], capture_output=True)
    assert_error(answered, 503, "task_queue_unavailable")
    figures.add("production_faults_answered_503")


def test_an_unreachable_broker_is_a_json_503(deployed, figures):
    world, serve = deployed
    # The call limits count in the broker's Redis: a write meets the outage there first.
    assert_error(prepare_svg(serve("redis://127.0.0.1:1/0"), world), 503, "dependency_unavailable")
    # Without limits, at the task queue.
    assert_error(prepare_svg(serve("redis://127.0.0.1:1/0", ARKME_RATE_LIMITS="off"), world), 503,
                 "task_queue_unavailable")
    figures.add("production_faults_answered_503")
