"""The gallery floor does the product's work: for every kind of image in the benchmark mix it
stores byte for byte what a prepare and confirm through the API store, and it refuses what
the product refuses because of its required checks."""
from __future__ import annotations

import hashlib

import pytest

from bench import gallery_floors as floor
from bench.images import KINDS
from galleries.ingest.png_stream import png_image_chunks
from galleries.models import Blob
from tests.support import images


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_the_floor_stores_what_the_product_stores(kind, gs, tmp_path):
    data = kind.make(7)
    name = gs.write(f"bench.{kind.extension}", data)
    gs.add_confirmed([name])
    [blob] = Blob.objects.all()
    source = gs.workspace / name
    store = tmp_path / "floor-store"
    store.mkdir()
    prepared = floor.prepare([source], store)
    assert prepared == [(hashlib.sha256(data).hexdigest(), blob.sha256)]
    floor.confirm([source], prepared, store)
    assert [p.name for p in store.iterdir()] == [blob.sha256]
    # The path the kind names is the one the product takes: only an upright PNG without a
    # colour profile is kept.
    if kind.path != "svg":
        from PIL import Image

        with Image.open(source) as image:
            plain = image.format == "PNG" and image.getexif().get(0x0112, 1) == 1 and "icc_profile" not in image.info
        assert plain == (kind.path == "kept")

def test_the_floor_runs_the_required_checks():
    from galleries.ingest.raster import ImageRejected

    with pytest.raises(ImageRejected):
        floor.derive(images.svg('<script>alert(1)</script>'))
    damaged = bytearray(images.png())
    damaged[-20] ^= 0xFF  # a CRC no longer matches: the stream check refuses to keep it
    assert png_image_chunks(bytes(damaged)) is None
