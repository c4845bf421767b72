"""The libvips peer does the product's image work: the same upright dimensions, no metadata,
the same format, and output the same size within a few per cent, so that a time ratio against
it compares like with like."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from bench.images import KINDS
from bench.libvips_peer import vips_pipeline
from galleries.ingest.process_image import process_image

RASTERS = [kind for kind in KINDS if kind.path != "svg"]


@pytest.mark.parametrize("kind", RASTERS, ids=[kind.name for kind in RASTERS])
def test_the_peer_stores_what_the_product_stores(kind):
    data = kind.make(3)
    ours = process_image(data)
    with Image.open(io.BytesIO(vips_pipeline(data))) as peer:
        assert peer.size == (ours.width, ours.height)
        assert peer.format.lower() == ours.format
        assert not peer.getexif() and "icc_profile" not in peer.info
    assert len(vips_pipeline(data)) <= max(len(ours.data) * 1.1, len(ours.data) + 4096)
