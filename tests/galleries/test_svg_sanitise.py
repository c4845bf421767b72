"""Restricted SVG: the allow-list and its grammars; refusals that never echo the input."""
from __future__ import annotations

import pytest

from galleries.ingest.rejection import ImageRejected
from galleries.ingest.svg_sanitise import sanitise_svg
from tests.support.images import BAD_SVG, svg


@pytest.mark.parametrize("name", sorted(BAD_SVG))
def test_disallowed_svg_is_refused(name):
    with pytest.raises(ImageRejected) as caught:
        sanitise_svg(BAD_SVG[name], "workspace_paths[0]")
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


@pytest.mark.parametrize("data", [
    svg("<zzmarkerzz/>"),
    svg('<rect width="1" height="1" zzmarkerzz="1"/>'),
    svg('<rect width="1" height="1" fill="zzmarkerzz"/>'),
    svg('<rect width="1" height="1" transform="zzmarkerzz(1)"/>'),
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400"><x:zzmarkerzz xmlns:x="urn:zzmarkerzz"/></svg>',
])
def test_refusals_never_repeat_attacker_chosen_text(data):
    with pytest.raises(ImageRejected) as refused:
        sanitise_svg(data)
    assert "zzmarkerzz" not in str(refused.value.as_envelope())
