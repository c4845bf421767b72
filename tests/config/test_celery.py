"""The Celery app: JSON task messages, msgpack results (bytes carried as they are), late
acknowledgement, and every scheduled task registered."""
from __future__ import annotations

import uuid

import pytest
from celery.backends.redis import RedisBackend
from celery.backends.rpc import RPCBackend
from django.conf import settings

from config.celery import app
from galleries.ingest import svg_render
from tests.support import images
from tests.support.live import listening
from tests.support.services import require_service

PNG = images.png()
REDIS = "redis://127.0.0.1:6379/15"


def _meta(result: object) -> dict[str, object]:
    return {"status": "SUCCESS", "result": result, "traceback": None, "children": [],
            "date_done": "2026-12-04T10:00:00+00:00", "task_id": "t-1"}


def test_json_task_messages_and_acks_late():
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late is True and app.conf.task_reject_on_worker_lost is True


def test_results_are_msgpack_and_nothing_else_is_read_back():
    assert app.conf.result_serializer == "msgpack" and app.conf.result_accept_content == ["msgpack"]


@pytest.mark.parametrize("store", [RedisBackend(app=app, url=REDIS), RPCBackend(app=app)], ids=["redis", "rpc"])
def test_a_result_carries_bytes_as_they_are_on_either_store(store):
    for meta in (_meta({"ok": PNG}), _meta({"ok": {"sha256": "ab" * 32, "created": True}}),
                 _meta({"error": {"code": "x", "message": "y"}, "status": 422})):
        payload = store.encode(meta)
        assert store.decode(payload) == meta
    assert PNG in store.encode(_meta({"ok": PNG}))  # not base64


@pytest.fixture
def stored_results():
    """Results stored and read as a worker and a web process do (not run in-process)."""
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def test_through_redis_a_stored_png_is_read_back_as_bytes(stored_results):
    require_service("Redis", listening(6379), "start redis-server on 127.0.0.1:6379")
    store = RedisBackend(app=app, url=REDIS)
    task_id = str(uuid.uuid4())
    store.store_result(task_id, {"ok": PNG}, "SUCCESS")
    try:
        assert store.get_task_meta(task_id)["result"] == {"ok": PNG}
    finally:
        store.client.delete(store.get_key_for_task(task_id))


def test_the_render_task_answers_the_png_as_bytes():
    answer = svg_render.render_svg.apply(args=(images.svg().decode(), 400, 400)).get()["ok"]
    assert isinstance(answer, bytes) and answer.startswith(b"\x89PNG")


def test_the_web_takes_the_workers_png_as_it_comes(settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr(svg_render, "run_and_wait", lambda task, svg, width, height: PNG)
    assert svg_render.render_png_via_task(b"<svg/>", 1, 1) == PNG


def test_every_periodic_task_is_registered():
    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, entry["task"]


def test_tasks_run_in_process_without_a_broker():
    assert settings.CELERY_BROKER_URL is None and settings.CELERY_TASK_ALWAYS_EAGER is True
