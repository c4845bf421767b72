"""The rows a gallery add reads and writes with SQL written by hand (``galleries.services.add_rows``,
``galleries.selectors``, ``galleries.blobs.services``) are the rows the ORM reads and writes."""
from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from django.conf import settings

from arkme.conversations.models import AgentSession, SessionKey
from arkme.kernel.errors import NotFound
from galleries.blobs.services import StagedImage, blobs_record, blobs_stored
from galleries.models import Blob, Gallery, GalleryHistory, GalleryItem, OperationStatus, PendingOperation
from galleries.selectors import extension_for_owner, gallery_shas
from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add


def _add(gs, world, paths):
    found = AgentSession.objects.get(public_id=gs.session)
    session = SessionKey(found.pk, found.public_id, found.workspace)  # as a call hands it over
    return session, gallery_prepare_add(account=world.alice, session=session, extension=gs.extension,
                                        source={"source": "workspace", "workspace_paths": paths})


def test_prepare_writes_the_operation_as_create_fills_it_and_answers_it_as_read(gs, world):
    paths = gs.write_many(2)
    session, operation = _add(gs, world, paths)
    read = PendingOperation.objects.get(pk=operation.pk)
    for field in PendingOperation._meta.concrete_fields:
        assert getattr(operation, field.attname) == getattr(read, field.attname), field.name
    assert (read.status, read.reply, read.replied_at, read.failure_code, read.ended_at) == (
        OperationStatus.PENDING, "", None, "", None)
    assert read.public_id.startswith("op_") and read.source_kind == "workspace" and len(read.sources) == 2
    assert read.expires_at - read.created_at == timedelta(seconds=settings.ARKME_PENDING_TTL_SECONDS)
    assert operation.extension.public_id == gs.extension
    assert operation.extension.gallery == Gallery.objects.get(extension__public_id=gs.extension)
    again = gallery_prepare_add(account=world.alice, session=session, extension=gs.extension,
                                source={"source": "workspace", "workspace_paths": paths})
    assert again.pk == operation.pk and again.sources == read.sources and again.expires_at == read.expires_at


def test_confirm_writes_items_revision_history_and_blob_rows_as_the_orm_reads_them(gs, world):
    session, operation = _add(gs, world, gs.write_many(2))
    gs.say("确认")
    done = gallery_confirm_add(account=world.alice, session=session, extension=gs.extension,
                               operation=operation.public_id)
    gallery = Gallery.objects.get(pk=done.gallery.pk)
    assert (done.gallery.revision, done.gallery.updated_at) == (gallery.revision, gallery.updated_at) == (
        1, gallery.updated_at)
    assert done.gallery.updated_at > operation.created_at and done.gallery.extension.public_id == gs.extension
    items = list(GalleryItem.objects.filter(gallery=gallery).order_by("position").select_related("blob"))
    assert [item.position for item in items] == [1, 2] and all(i.public_id.startswith("img_") for i in items)
    history = GalleryHistory.objects.get(gallery=gallery)
    assert (history.revision, history.action, history.items, history.operation_id) == (
        1, GalleryHistory.Action.ADD, [item.public_id for item in items], operation.pk)
    sources = PendingOperation.objects.get(pk=operation.pk).sources
    assert [(i.blob.sha256, i.blob.width, i.blob.height, i.blob.format) for i in items] == [
        (s["content_sha256"], s["width"], s["height"], s["format"]) for s in sources]
    assert all(i.blob.size > 0 and i.blob.created_at is not None for i in items)
    ended = PendingOperation.objects.get(pk=operation.pk)
    assert ended.status == OperationStatus.CONFIRMED and ended.ended_at is not None and ended.failure_code == ""
    assert gallery_shas(gallery) == [s["content_sha256"] for s in sources]


@pytest.mark.django_db
def test_blob_rows_recorded_by_a_concurrent_confirm_first_are_no_error():
    first = StagedImage("a" * 64, 400, 300, "png", 10, stored=False)
    other = StagedImage("b" * 64, 320, 320, "jpeg", 20, stored=False)
    earlier = blobs_record([first])
    ids = blobs_record([first, other])  # first: staged here too, its row already made
    assert ids == {blob.sha256: blob.pk for blob in Blob.objects.all()} and ids[first.sha256] == earlier[first.sha256]
    assert Blob.objects.get(sha256=other.sha256).format == "jpeg"
    assert blobs_stored([first.sha256, "c" * 64, first.sha256]) == {first.sha256: 10}
    assert blobs_stored([]) == {} and blobs_record([]) == {}


def test_the_extension_comes_with_its_gallery_and_another_accounts_is_404(gs, world, django_assert_num_queries):
    extension = extension_for_owner(world.alice, gs.extension)
    with django_assert_num_queries(0):
        assert extension.gallery.extension is extension and extension.owner_id == world.alice.pk
    assert extension.gallery == Gallery.objects.get(extension=extension)
    with pytest.raises(NotFound):
        extension_for_owner(world.bob, gs.extension)


def _racing_prepare(gs, world, monkeypatch):
    """A prepare that does not see the pending add another prepare just wrote (as when both
    run at once): its insert is refused by the one-pending-add constraint."""
    from galleries.services import gallery_add

    real = gallery_add.pending_add
    calls = {"n": 0}

    def late(account, target):
        calls["n"] += 1
        return None if calls["n"] == 1 else real(account, target)

    monkeypatch.setattr(gallery_add, "pending_add", late)
    return lambda paths: _add(gs, world, paths)[1]


@pytest.mark.parametrize("outer", [False, True], ids=["alone", "inside a transaction"])
@pytest.mark.django_db(transaction=True)
def test_a_prepare_refused_by_a_concurrent_one_is_409_and_leaves_a_callers_transaction_usable(
        gs, world, monkeypatch, outer):
    from django.db import transaction

    from arkme.kernel.errors import Conflict

    first = _add(gs, world, gs.write_many(1))[1]
    prepare = _racing_prepare(gs, world, monkeypatch)
    with transaction.atomic() if outer else contextlib.nullcontext():
        with pytest.raises(Conflict) as refused:
            prepare(gs.write_many(1, start=5))
        assert refused.value.code == "operation_pending"
        assert list(PendingOperation.objects.values_list("pk", flat=True)) == [first.pk]  # still usable
