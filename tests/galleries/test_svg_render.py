"""Rendering restricted SVG in a bounded child process: deadline, memory, replacement."""
from __future__ import annotations

import io
import os
import signal
import threading
import time

import pytest
from PIL import Image

from galleries.ingest import svg_render
from galleries.ingest.process_image import process_image
from galleries.ingest.svg_render import RenderFailed, render_png
from galleries.ingest.svg_sanitise import sanitise_svg
from tests.support.images import GOOD_SVG, dashed_rings, svg


@pytest.mark.parametrize("data", GOOD_SVG)
def test_allowed_svg_renders_to_png(data):
    result = process_image(data)
    assert result.format == "png"
    stored = Image.open(io.BytesIO(result.data))
    assert stored.format == "PNG" and stored.size == (result.width, result.height)
    assert 320 <= result.width <= 4096

@pytest.fixture
def one_renderer(monkeypatch, settings):
    """A pool of one render process of its own, so a test can name the process it used."""
    settings.ARKME_SVG_RENDER_PROCESSES = 1
    pool = svg_render._Pool()
    monkeypatch.setattr(svg_render, "_pool", pool)
    yield pool
    for renderer in pool.renderers:
        renderer._discard()


def test_render_is_killed_at_its_deadline_and_the_next_render_works(one_renderer):
    render_png(svg(), 400, 400)  # the render process is up
    pid = one_renderer.renderers[0].process.pid
    safe = sanitise_svg(dashed_rings())
    with pytest.raises(RenderFailed, match="too long"):
        render_png(safe.data, safe.width, safe.height, timeout=0.3)
    assert one_renderer.renderers[0].process is None  # killed, not waited for
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert render_png(svg(), 400, 400).startswith(b"\x89PNG")


def test_render_is_bounded_in_memory():
    with pytest.raises(RenderFailed):
        render_png(svg("", 'viewBox="0 0 4000 4000"'), 4000, 4000, memory=16 * 1024 * 1024)
    assert render_png(svg(), 400, 400).startswith(b"\x89PNG")


def test_render_failure_is_reported_and_the_process_replaced():
    with pytest.raises(RenderFailed):
        render_png(b"<not svg", 400, 400)
    assert render_png(svg(), 400, 400).startswith(b"\x89PNG")


def test_renders_run_outside_this_process(one_renderer):
    render_png(svg(), 400, 400)
    assert one_renderer.renderers[0].process.pid != os.getpid()
    assert one_renderer.renderers[0].owner_pid == os.getpid()


def test_the_deadline_comes_from_settings(settings, one_renderer):
    render_png(svg(), 400, 400)
    settings.ARKME_SVG_TIMEOUT_SECONDS = 1
    safe = sanitise_svg(dashed_rings(2000))
    with pytest.raises(RenderFailed, match="too long"):
        render_png(safe.data, safe.width, safe.height)
    assert one_renderer.renderers[0].process is None


def test_a_render_at_its_deadline_does_not_hold_up_the_others(settings, monkeypatch):
    settings.ARKME_SVG_RENDER_PROCESSES = 2
    pool = svg_render._Pool()
    monkeypatch.setattr(svg_render, "_pool", pool)
    render_png(svg(), 400, 400)
    render_png(svg(), 400, 400)  # both render processes are up, the first is next in line
    stuck = pool.free.queue[0]
    # A stopped render process is a render that never ends, however fast this machine renders
    # a hostile SVG; only the deadline can free its slot.
    os.kill(stuck.process.pid, signal.SIGSTOP)
    outcome = []

    def hostile():
        try:
            render_png(svg(), 400, 400, timeout=5)
        except RenderFailed as exc:
            outcome.append(str(exc))

    slow = threading.Thread(target=hostile)
    slow.start()
    while pool.free.qsize() != 1:  # the hostile render holds one slot
        time.sleep(0.01)
    assert render_png(svg(), 400, 400).startswith(b"\x89PNG")
    assert slow.is_alive()  # the simple render finished while the hostile one still ran
    slow.join()
    assert outcome and "too long" in outcome[0]
    assert stuck.process is None  # killed at its deadline, stopped or not
    for renderer in pool.renderers:
        renderer._discard()


@pytest.fixture
def held_renders(monkeypatch):
    """Renders that hold their slot until released: ``start(account)`` begins one in a thread
    and returns once it renders; ``release()`` lets every one finish."""
    from django.db import connection

    gate, running, threads = threading.Event(), threading.Semaphore(0), []

    def render(svg_bytes, width, height):
        running.release()
        gate.wait(10)
        return b"\x89PNG"

    monkeypatch.setattr(svg_render, "_render_waited", render)

    def start(account):
        def run():
            try:
                svg_render.render_png_via_task(b"<svg/>", 1, 1, account=account)
            finally:
                connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        threads.append(thread)
        assert running.acquire(timeout=10)

    def release():
        gate.set()
        for thread in threads:
            thread.join(10)

    yield start, release
    release()


@pytest.mark.django_db(transaction=True)
def test_an_account_past_its_renders_in_flight_is_refused_at_once_and_others_are_not(settings, held_renders):
    from arkme.kernel.errors import Throttled

    settings.ARKME_SVG_RENDERS_PER_ACCOUNT = 2
    start, release = held_renders
    start(1)
    start(1)
    began = time.monotonic()
    with pytest.raises(Throttled) as refused:
        svg_render.render_png_via_task(b"<svg/>", 1, 1, account=1)
    assert time.monotonic() - began < 1  # refused, not queued
    assert refused.value.http_status == 429 and refused.value.code == "throttled"
    assert refused.value.details["retry_after_seconds"] == settings.ARKME_SVG_TIMEOUT_SECONDS
    start(2)  # another account renders beside them
    release()
    start(1)  # a finished render gives its slot back
    release()


def test_the_in_process_pool_has_room_beyond_one_accounts_renders(settings):
    assert settings.ARKME_SVG_RENDER_PROCESSES > settings.ARKME_SVG_RENDERS_PER_ACCOUNT


def test_a_render_stops_when_its_caller_stops_waiting(one_renderer):
    from arkme.kernel.errors import QueueUnavailable

    render_png(svg(), 400, 400)
    safe = sanitise_svg(dashed_rings(2000))
    began = time.monotonic()
    with pytest.raises(QueueUnavailable):  # the caller's 503, not the input's 422
        render_png(safe.data, safe.width, safe.height, caller_left=0.5)
    assert time.monotonic() - began < 3
    assert one_renderer.renderers[0].process is None  # killed, not left rendering for nobody
    with pytest.raises(QueueUnavailable):
        render_png(svg(), 400, 400, caller_left=0)  # nothing starts once the caller has gone
    assert render_png(svg(), 400, 400, caller_left=5).startswith(b"\x89PNG")


def test_a_render_task_stops_at_its_callers_deadline(settings, one_renderer, monkeypatch):
    seen = []
    monkeypatch.setattr(svg_render, "deadline_left", lambda task: 0.5)
    monkeypatch.setattr(svg_render, "render_png", lambda *a, caller_left=None, **k: seen.append(caller_left) or b"")
    svg_render.render_svg.apply(args=(svg().decode(), 400, 400)).get()
    assert seen == [0.5]
