"""The gallery floor does the product's work: for every kind of image in the benchmark mix it
stores byte for byte what a prepare and confirm through the API store, and it refuses what
the product refuses because of its required checks."""
from __future__ import annotations

import hashlib

import pytest

from bench import gallery_floors as floor
from bench.gallery_books import Books
from bench.images import KINDS
from galleries.ingest.png_stream import png_image_chunks
from galleries.models import Blob, Gallery, GalleryItem, PendingOperation
from tests.support import images


def _gallery_state(extension):
    """What an add leaves: the gallery's revision, its items' content in order, the blob rows,
    the operations' statuses."""
    gallery = Gallery.objects.get(extension__public_id=extension)
    items = [(item.position, item.blob.sha256) for item in gallery.items.select_related("blob").order_by("position")]
    blobs = sorted(Blob.objects.values_list("sha256", "size", "width", "height", "format"))
    return gallery.revision, items, blobs, sorted(PendingOperation.objects.values_list("status", flat=True))


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_the_floor_stores_and_records_what_the_product_does(kind, gs, tmp_path):
    from arkme.conversations.models import AgentSession, Message

    data = [kind.make(7), kind.make(8)]
    names = [gs.write(f"bench{i}.{kind.extension}", one) for i, one in enumerate(data)]
    gs.add_confirmed(names)
    product = _gallery_state(gs.extension)
    blobs = {blob.sha256: blob for blob in Blob.objects.all()}
    sources = [gs.workspace / name for name in names]
    store = tmp_path / "floor-store"
    store.mkdir()
    prepared = floor.prepare(sources, store)
    stored = [op["content_sha256"] for op in PendingOperation.objects.get().sources]
    assert prepared == [(hashlib.sha256(one).hexdigest(), sha, blobs[sha].width, blobs[sha].height,
                         blobs[sha].format, blobs[sha].size) for one, sha in zip(data, stored, strict=True)]
    # Undo the product's add, then let the floor add the same images with its books.
    GalleryItem.objects.all().delete()
    Blob.objects.all().delete()
    PendingOperation.objects.all().delete()
    Gallery.objects.filter(extension__public_id=gs.extension).update(revision=0)
    session = AgentSession.objects.get(public_id=gs.session)
    floor.add(sources, store, Books(session.account_id, session.pk, gs.extension),
              lambda: Message.objects.create(session=session, message_id="floor-yes", text="确认"))
    assert sorted(p.name for p in store.iterdir()) == sorted(set(stored))
    assert _gallery_state(gs.extension) == product
    # The path the kind names is the one the product takes: only an upright PNG without a
    # colour profile is kept.
    if kind.path != "svg":
        from PIL import Image

        with Image.open(sources[0]) as image:
            plain = image.format == "PNG" and image.getexif().get(0x0112, 1) == 1 and "icc_profile" not in image.info
        assert plain == (kind.path == "kept")


def test_the_floor_runs_the_required_checks():
    from galleries.ingest.rejection import ImageRejected

    with pytest.raises(ImageRejected):
        floor.derive(images.svg('<script>alert(1)</script>'))
    damaged = bytearray(images.png())
    damaged[-20] ^= 0xFF  # a CRC no longer matches: the stream check refuses to keep it
    assert png_image_chunks(bytes(damaged)) is None
