"""Rendering restricted SVG in a bounded child process: deadline, memory, replacement."""
from __future__ import annotations

import io
import os
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

def test_render_is_killed_at_its_deadline_and_the_next_render_works():
    render_png(svg(), 400, 400)  # the render process is up
    pid = svg_render._renderer.process.pid
    safe = sanitise_svg(dashed_rings())
    started = time.monotonic()
    with pytest.raises(RenderFailed, match="too long"):
        render_png(safe.data, safe.width, safe.height, timeout=0.3)
    assert time.monotonic() - started < 3  # killed, not waited for
    assert svg_render._renderer.process is None
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


def test_renders_run_outside_this_process():
    render_png(svg(), 400, 400)
    assert svg_render._renderer.process.pid != os.getpid()
    assert svg_render._renderer.owner_pid == os.getpid()


def test_the_deadline_comes_from_settings(settings):
    render_png(svg(), 400, 400)
    settings.ARKME_SVG_TIMEOUT_SECONDS = 1
    safe = sanitise_svg(dashed_rings(2000))
    started = time.monotonic()
    with pytest.raises(RenderFailed, match="too long"):
        render_png(safe.data, safe.width, safe.height)
    assert time.monotonic() - started < 5
