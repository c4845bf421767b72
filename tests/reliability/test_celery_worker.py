"""A real Celery worker on the local Redis broker, as a subprocess sharing the test database:
SVG rendering, blob storage and invitation delivery through the API; a worker killed with
SIGKILL mid-task and restarted; a broker that is down."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

from config.celery import app
from galleries.models import Gallery, OperationStatus, PendingOperation
from groups.models import ChatMessage
from tests.support import images
from tests.support.errors import assert_error
from tests.support.services import require_service

pytestmark = [pytest.mark.celery_worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
BROKER = "redis://127.0.0.1:6379/14"
VISIBILITY_TIMEOUT = 10
# Below the visibility timeout, as the arkme.E003 check requires: a render still running when the
# timeout passes would be delivered again, and the worker would spend itself on copies.
TASK_TIME_LIMIT = 8


def redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


class Worker:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process: subprocess.Popen | None = None
        self.log_path = Path(env["ARKME_MEDIA_ROOT"]).parent / "worker.log"
        self.log = open(self.log_path, "ab")

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "info", "-c", "1",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"test-{os.getpid()}@%h"],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        name = f"test-{os.getpid()}@"
        while time.monotonic() < deadline:
            if any(next(iter(reply)).startswith(name) for reply in app.control.ping(timeout=0.5)):
                return
            assert self.process.poll() is None, "the worker exited at start"
        raise AssertionError("the worker did not come up")

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def received(self, task: str, since: int) -> bool:
        """Whether the worker logged taking ``task`` off the queue after offset ``since``.

        Read from the worker's own log line, not asked over the control channel: on a loaded
        machine an ``inspect`` reply can miss its timeout for as long as a render lasts."""
        with open(self.log_path, "rb") as log:
            log.seek(since)
            return any(f"{task}[".encode() in line and b"received" in line for line in log)


@pytest.fixture
def worker(postgres, settings, monkeypatch, _isolated_storage):
    require_service("Redis", redis_up(), "start redis-server on 127.0.0.1:6379")
    redis.Redis.from_url(BROKER).flushdb()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": BROKER,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "CELERY_TASK_TIME_LIMIT": str(TASK_TIME_LIMIT),
        "CELERY_BROKER_TRANSPORT_OPTIONS": '{"unacked_restore_interval": 1, "unacked_restore_throttle": 1}',
        "ARKME_MEDIA_ROOT": str(settings.ARKME_MEDIA_ROOT),
        "ARKME_WORKSPACE_ROOT": str(settings.ARKME_WORKSPACE_ROOT),
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
    }
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.ARKME_TASK_WAIT_SECONDS = 45
    previous = {key: app.conf[key] for key in ("task_always_eager", "broker_url", "result_backend",
                                               "broker_transport_options")}
    app.conf.update(task_always_eager=False, broker_url=BROKER, result_backend=BROKER,
                    broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT, "max_retries": 1})
    reset_connections()
    running = Worker(env)
    try:
        running.start()
        yield running
    finally:
        running.stop()
        app.conf.update(previous)
        reset_connections()


def reset_connections() -> None:
    """Forget pooled broker connections and the result backend, after changing their URLs."""
    from kombu import pools

    pools.reset()
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
    app._local.__dict__.pop("backend", None)


def heavy_svg(circles: int = 200) -> bytes:
    """A small, valid SVG that takes cairo a second or two: hundreds of finely dashed rings."""
    body = "".join(f'<circle cx="500" cy="500" r="{100 + i}" fill="none" stroke="red" stroke-width="1" '
                   f'stroke-dasharray="0.02 0.02"/>' for i in range(circles))
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1000 1000">{body}</svg>'.encode()


def test_svg_blobs_and_invitations_run_on_the_worker(worker, gs, dsh, world):
    svg = gs.write("logo.svg", images.svg())
    png = gs.write("plain.png", images.png())
    prepared = gs.prepare(source="workspace", workspace_paths=[svg, png])
    assert prepared.status_code == 200, prepared.content
    gs.say("确认")
    confirmed = gs.confirm(prepared.json()["result"]["operation"])
    assert confirmed.status_code == 200, confirmed.content
    assert [i["format"] for i in confirmed.json()["result"]["gallery"]["items"]] == ["png", "png"]
    # The render's PNG came back as bytes (msgpack results), never as base64 text.
    results = redis.Redis.from_url(BROKER)
    stored = [results.get(key) for key in results.scan_iter("celery-task-meta-*")]
    # One render an add: prepare's, which confirm stores without rendering again.
    assert sum(b"\x89PNG" in payload for payload in stored) == 1
    assert not any(b"iVBORw0KGgo" in payload for payload in stored)

    alice = dsh.open_session(world.alice)["session"]
    source = next(g["source_ref"] for g in dsh.execute(alice, "arkme_context", {}).json()["result"]["groups"]
                  if g["name"] == "approval-group")
    candidates = dsh.execute(alice, "arkme_group_member_candidates", {"source_ref": source}).json()["result"]
    dave = next(c["candidate_ref"] for c in candidates["candidates"] if c["display_name"] == "Dave")
    added = dsh.approve_and_execute(alice, "arkme_group_member_add", {"source_ref": source, "candidate_refs": [dave]})
    assert added.json()["result"]["results"][0]["outcome"] == "invited"
    deadline = time.monotonic() + 30
    while ChatMessage.objects.filter(delivered_at__isnull=True).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ChatMessage.objects.get().delivered_at is not None


def test_a_worker_killed_mid_task_and_restarted_leaves_the_same_final_state(figures, worker, gs):
    name = gs.write("heavy.svg", heavy_svg())
    answers = []

    def prepare():
        try:
            answers.append(gs.prepare(source="workspace", workspace_paths=[name]))
        finally:
            connection.close()

    caller = threading.Thread(target=prepare)
    since = worker.log_size()
    caller.start()
    deadline = time.monotonic() + 30
    while not worker.received("galleries.render_svg", since):
        assert time.monotonic() < deadline, "the render was never taken"
        time.sleep(0.02)
    worker.kill()
    figures.add("worker_kills", 1)
    worker.start()  # the unacknowledged render is delivered again after the visibility timeout
    caller.join(timeout=60)
    assert answers and answers[0].status_code == 200, answers and answers[0].content
    operation = PendingOperation.objects.get()
    assert operation.status == OperationStatus.PENDING and len(operation.sources) == 1
    # The same bytes rendered without interruption give the same content fingerprint.
    from galleries.ingest.process_image import process_image
    worker_result = operation.sources[0]["content_sha256"]
    gs.say("确认")
    confirmed = gs.confirm(operation.public_id)
    assert confirmed.status_code == 200
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    assert process_image((gs.workspace / name).read_bytes()).sha256 == worker_result
    figures.add("worker_kills_recovered", 1)


def test_a_broker_that_is_down_gives_503_and_no_partial_state(figures, worker, gs, settings):
    png = gs.write("a.png", images.png())
    operation = gs.prepare(source="workspace", workspace_paths=[png]).json()["result"]["operation"]
    gs.say("确认")
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    reset_connections()
    response = gs.confirm(operation)
    assert_error(response, 503, "task_queue_unavailable")
    from galleries.services.extensions import extension_create

    gs.extension = extension_create(owner=PendingOperation.objects.get().account, name="second").public_id
    svg = gs.write("b.svg", images.svg())
    rendered = gs.prepare(source="workspace", workspace_paths=[svg])
    assert_error(rendered, 503, "task_queue_unavailable")
    assert PendingOperation.objects.get().status == OperationStatus.PENDING  # and no second operation
    assert all(gallery.revision == 0 for gallery in Gallery.objects.all())
    figures.add("broker_down_503", 1)
