"""The Redis result store: answers with bytes as msgpack, every other answer as the JSON
Celery's own Redis store writes, and both read back by either reader that must read them."""
from __future__ import annotations

import base64
import socket
import uuid

import pytest
from celery.app.backends import by_url
from celery.backends.redis import RedisBackend

from arkme.kernel.result_store import STORE, RedisResultStore, carries_bytes, result_backend_url
from config.celery import app
from galleries.ingest import svg_render
from galleries.ingest.svg_render import BASE64, BYTES, render_svg
from tests.support import images
from tests.support.services import require_service

URL = "redis://127.0.0.1:6379/15"
PNG = images.png()
MSGPACK_CONTAINERS = set(range(0x80, 0xA0)) | {0xDC, 0xDD, 0xDE, 0xDF}


def _meta(result: object, status: str = "SUCCESS") -> dict[str, object]:
    return {"status": status, "result": result, "traceback": None, "children": [],
            "date_done": "2026-12-04T10:00:00+00:00", "task_id": "t-1"}


@pytest.fixture
def compression():
    previous = app.conf.result_compression
    yield lambda name: app.conf.update(result_compression=name)
    app.conf.update(result_compression=previous)


def test_a_redis_url_names_the_store_and_others_are_left_alone():
    assert result_backend_url("redis://h:6379/0") == f"{STORE}+redis://h:6379/0"
    assert result_backend_url("rediss://h:6380/1") == f"{STORE}+rediss://h:6380/1"
    assert result_backend_url("rpc://") == "rpc://"
    assert result_backend_url(None) is None
    backend, url = by_url(result_backend_url(URL))
    assert backend is RedisResultStore and url == URL


def test_an_answer_without_bytes_is_the_json_the_previous_release_reads():
    ours, theirs = RedisResultStore(app=app, url=URL), RedisBackend(app=app, url=URL)
    for meta in (_meta({"ok": {"sha256": "ab" * 32, "width": 3}}),
                 _meta({"error": {"code": "x", "message": "y"}, "status": 422}),
                 _meta({"exc_type": "ValueError", "exc_message": ["bad"], "exc_module": "builtins"}, "FAILURE")):
        payload = ours.encode(meta)
        assert payload == theirs.encode(meta)
        assert theirs.decode(payload) == ours.decode(payload) == meta


def test_an_answer_with_bytes_is_msgpack_and_comes_back_as_the_same_bytes():
    store = RedisResultStore(app=app, url=URL)
    meta = _meta({"ok": PNG})
    payload = store.encode(meta)
    assert payload[0] in MSGPACK_CONTAINERS and PNG in payload  # carried as it is, not as base64
    assert store.decode(payload) == meta
    # Nested a few levels down, and in a list (a chord's part), it is found too.
    nested = _meta({"ok": {"parts": [{"png": PNG}]}})
    assert store.decode(store.encode(nested)) == nested
    assert store.decode(store.encode([1, "t-1", "SUCCESS", PNG])) == [1, "t-1", "SUCCESS", PNG]


def test_both_encodings_survive_result_compression(compression):
    compression("gzip")
    store = RedisResultStore(app=app, url=URL)
    assert store.compression == "gzip"
    for meta in (_meta({"ok": PNG}), _meta({"ok": "text"})):
        payload = store.encode(meta)
        assert payload[0] not in MSGPACK_CONTAINERS and payload[:1] != b"{"  # compressed, with Celery's marker
        assert store.decode(payload) == meta


@pytest.fixture
def stored_results():
    """Results stored and read as a worker and a web process do (not run in-process)."""
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def test_through_redis_a_stored_png_is_read_back_as_bytes(stored_results):
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
        up = True
    except OSError:
        up = False
    require_service("Redis", up, "start redis-server on 127.0.0.1:6379")
    store, previous = RedisResultStore(app=app, url=URL), RedisBackend(app=app, url=URL)
    png_id, text_id = str(uuid.uuid4()), str(uuid.uuid4())
    store.store_result(png_id, {"ok": PNG}, "SUCCESS")
    store.store_result(text_id, {"ok": "done"}, "SUCCESS")
    try:
        assert store.client.get(store.get_key_for_task(png_id))[0] in MSGPACK_CONTAINERS
        assert store.get_task_meta(png_id)["result"] == {"ok": PNG}
        assert store.get_task_meta(text_id)["result"] == {"ok": "done"}
        # A web process of the previous release reads every answer not sent to it as bytes.
        assert previous.get_task_meta(text_id)["result"] == {"ok": "done"}
    finally:
        store.client.delete(store.get_key_for_task(png_id), store.get_key_for_task(text_id))


def test_the_render_task_answers_in_the_encoding_it_is_asked_for(settings):
    svg = images.svg().decode()
    as_bytes = render_svg.apply(args=(svg, 400, 400, BYTES)).get()["ok"]
    as_text = render_svg.apply(args=(svg, 400, 400, BASE64)).get()["ok"]
    previous_release = render_svg.apply(args=(svg, 400, 400)).get()["ok"]  # three arguments, as before
    assert isinstance(as_bytes, bytes) and as_bytes.startswith(b"\x89PNG")
    assert as_text == previous_release and isinstance(as_text, str)
    assert base64.b64decode(as_text) == as_bytes
    # Anything else asked for is base64: the worker never guesses bytes for a reader.
    assert render_svg.apply(args=(svg, 400, 400, "other")).get()["ok"] == as_text


@pytest.fixture
def result_backend():
    previous = app.conf.result_backend

    def use(url: str) -> None:
        app.conf.result_backend = url
        app._local.__dict__.pop("backend", None)  # Celery caches the store per thread

    yield use
    use(previous)


def test_the_web_asks_for_bytes_only_where_the_store_carries_them(settings, monkeypatch, result_backend):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    asked = []

    def worker(task, svg, width, height, carry):
        asked.append(carry)
        return PNG if carry == BYTES else base64.b64encode(PNG).decode()

    monkeypatch.setattr(svg_render, "run_and_wait", worker)
    result_backend(result_backend_url(URL))
    assert carries_bytes() and svg_render.render_png_via_task(b"<svg/>", 1, 1) == PNG
    result_backend("rpc://")
    assert not carries_bytes() and svg_render.render_png_via_task(b"<svg/>", 1, 1) == PNG
    assert asked == [BYTES, BASE64]
