"""Restricted SVG: the allow-list, the grammars, and rendering in a bounded child."""
from __future__ import annotations

import io
import os
import time

import pytest
from PIL import Image

from galleries.ingest import svg_render
from galleries.ingest.process_image import process_image
from galleries.ingest.raster import ImageRejected
from galleries.ingest.svg_render import RenderFailed, render_png
from galleries.ingest.svg_sanitise import sanitise_svg

from .images import svg

GOOD = [
    svg(),
    svg('<defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/><stop offset="100%" stop-color="red"/>'
        '</linearGradient></defs><rect x="0" y="0" width="400" height="400" fill="url(#g)"/>'),
    svg('<defs><clipPath id="c"><circle cx="200" cy="200" r="150"/></clipPath></defs>'
        '<g clip-path="url(#c)" transform="translate(10,10) rotate(15)"><path d="M0 0 L400 400 Z" stroke="blue" '
        'stroke-width="4" fill="none"/></g>'),
    svg('<title>Logo</title><desc>a logo</desc><polygon points="0,0 400,0 200,400" fill="rgb(10, 20, 30)"/>'),
    svg('<rect width="10" height="10"/>', 'viewBox="0 0 40 40" width="800" height="800"'),
]

BAD = {
    "script": svg('<script>alert(1)</script>'),
    "onload": svg('', 'viewBox="0 0 400 400" onload="alert(1)"'),
    "style attribute": svg('<rect width="10" height="10" style="fill:red"/>'),
    "style element": svg('<style>rect{fill:red}</style>'),
    "foreignObject": svg('<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">x</div></foreignObject>'),
    "image": svg('<image href="file:///etc/passwd" width="10" height="10"/>'),
    "xlink href": b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
                  b'viewBox="0 0 400 400"><linearGradient id="a"/><linearGradient id="b" xlink:href="#a"/></svg>',
    "use": svg('<defs><circle id="c" r="5"/></defs><use href="#c"/>'),
    "text": svg('<text x="10" y="10">hi</text>'),
    "animation": svg('<circle r="5"><animate attributeName="r" to="10"/></circle>'),
    "stray text": svg('hello'),
    "forward url": svg('<rect width="10" height="10" fill="url(#later)"/><linearGradient id="later"/>'),
    "external url": svg('<rect width="10" height="10" fill="url(http://evil/x)"/>'),
    "huge number": svg('<circle cx="200" cy="200" r="1e30" fill="red"/>'),
    "infinite": svg('<circle cx="200" cy="200" r="inf"/>'),
    "nan in path": svg('<path d="M 0 0 L NaN 5"/>'),
    "bad transform": svg('<g transform="expression(alert(1))"/>'),
    "bad colour": svg('<rect width="1" height="1" fill="javascript:alert(1)"/>'),
    "no viewBox": svg('', 'width="400" height="400"'),
    "not svg root": b'<html xmlns="http://www.w3.org/2000/svg"/>',
    "foreign namespace": b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400">'
                         b'<x:a xmlns:x="http://example.com/x"/></svg>',
    "dtd": b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa">]>'
           b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400"><title>&a;</title></svg>',
    "external entity": b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                       b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400"><title>&x;</title></svg>',
    "too small": svg('', 'viewBox="0 0 100 100"'),
    "too big": svg('', 'viewBox="0 0 5000 400"'),
    "deep nesting": svg("<g>" * 60 + "</g>" * 60),
}


@pytest.mark.parametrize("data", GOOD)
def test_allowed_svg_renders_to_png(data):
    result = process_image(data)
    assert result.format == "png"
    stored = Image.open(io.BytesIO(result.data))
    assert stored.format == "PNG" and stored.size == (result.width, result.height)
    assert 320 <= result.width <= 4096


@pytest.mark.parametrize("name", sorted(BAD))
def test_disallowed_svg_is_refused(name):
    with pytest.raises(ImageRejected) as caught:
        sanitise_svg(BAD[name], "workspace_paths[0]")
    assert caught.value.http_status == 422
    assert caught.value.details["fields"] == ["workspace_paths[0]"]


def test_oversized_svg_is_refused():
    data = svg("<g/>" * 300000)
    assert len(data) > 1024 * 1024
    with pytest.raises(ImageRejected) as caught:
        sanitise_svg(data)
    assert caught.value.code == "image_too_large"


def test_output_size_follows_width_height_or_viewbox():
    assert (sanitise_svg(svg()).width, sanitise_svg(svg()).height) == (400, 400)
    safe = sanitise_svg(svg("", 'viewBox="0 0 100 50" width="800"'))
    assert (safe.width, safe.height) == (800, 400)


def test_sanitised_output_drops_comments_and_instructions():
    data = b'<?xml version="1.0"?><!-- hidden --><?pi x?>' + svg('<!-- c --><rect width="1" height="1"/>')
    clean = sanitise_svg(data).data
    assert b"hidden" not in clean and b"<!--" not in clean and b"<?pi" not in clean


def dashed_rings(count: int = 400) -> bytes:
    """Valid and small, but seconds of work for cairo."""
    return svg("".join(f'<circle cx="500" cy="500" r="{100 + i}" fill="none" stroke="red" stroke-width="1" '
                       f'stroke-dasharray="0.02 0.02"/>' for i in range(count)), 'viewBox="0 0 1000 1000"')


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
