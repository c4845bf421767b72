"""The libvips peer does the product's image work: the same upright dimensions, no metadata,
the same format, and output the same size within a few per cent, so that a time ratio against
it compares like with like; on every kind of the figure, those Pillow decoded or decodes
(palettes, 16-bit colour, GIF, CMYK) included."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from bench.images import KINDS, PILLOW_PATH_KINDS
from bench.libvips_peer import vips_pipeline
from galleries.ingest.process_image import process_image

RASTERS = [kind for kind in [*KINDS, *PILLOW_PATH_KINDS] if kind.path != "svg"]


@pytest.mark.parametrize("kind", RASTERS, ids=[kind.name for kind in RASTERS])
def test_the_peer_stores_what_the_product_stores(kind):
    data = kind.make(3)
    ours = process_image(data)
    peer_output = vips_pipeline(data)
    with Image.open(io.BytesIO(peer_output)) as peer:
        assert peer.size == (ours.width, ours.height)
        assert peer.format.lower() == ours.format
        assert not peer.getexif() and "icc_profile" not in peer.info
        assert peer.mode != "CMYK"  # converted to sRGB, as the product must
    assert len(peer_output) <= max(len(ours.data) * 1.1, len(ours.data) + 4096)


def test_the_peer_streams_where_the_input_allows(monkeypatch):
    """Sequential access wherever no turn is needed; random access only for a turn."""
    import pyvips

    loads: list[str] = []
    real = pyvips.Image.new_from_buffer

    def spy(data, options, **kwargs):
        loads.append(kwargs.get("access", "random"))
        return real(data, options, **kwargs)

    monkeypatch.setattr(pyvips.Image, "new_from_buffer", spy)
    upright = {"photo jpeg 12 Mpx, upright", "gif 4096²", "cmyk jpeg 4096², upright"}
    for kind in RASTERS:
        if kind.name in upright:
            loads.clear()
            vips_pipeline(kind.make(1))
            assert loads == ["sequential"], kind.name
    loads.clear()
    vips_pipeline(next(kind for kind in RASTERS if kind.name == "photo jpeg 12 Mpx, turned, ICC").make(1))
    assert loads == ["sequential", "random"]
