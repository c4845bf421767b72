"""arkme_extension_preview_add: prepare, 确认, confirm, cancel, over every source."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import signing
from django.utils import timezone

from galleries.models import Blob, Gallery, GalleryHistory, GalleryItem, OperationStatus, PendingOperation
from galleries.services.gallery_add import is_confirmation
from tests.support import images
from tests.support.errors import assert_error


def result(response):
    assert response.status_code == 200, response.content
    return response.json()["result"]


def stored_files(media):
    return sorted(p for p in media.rglob("*") if p.is_file() and "captured" not in p.parts)


# --- prepare -------------------------------------------------------------------------------

def test_prepare_answers_the_contract_and_writes_only_the_operation(gs, _isolated_storage):
    paths = gs.write_many(3)
    body = result(gs.prepare(source="workspace", workspace_paths=paths))
    assert set(body) == {"operation", "question", "expires_at", "images", "gallery"}
    assert "确认" in body["question"] and "alice-ext" in body["question"] and "3 images" in body["question"]
    assert "3 of 20" in body["question"]
    assert [i["index"] for i in body["images"]] == [1, 2, 3]
    assert body["images"][0] == {"index": 1, "width": 400, "height": 400, "format": "png", "already_present": False}
    assert body["gallery"]["revision"] == 0 and body["gallery"]["items"] == []
    assert PendingOperation.objects.count() == 1
    assert Blob.objects.count() == 0 and GalleryItem.objects.count() == 0
    assert stored_files(_isolated_storage) == []


def test_same_prepare_returns_the_same_operation_a_different_one_is_409(gs):
    paths = gs.write_many(2)
    first = result(gs.prepare(source="workspace", workspace_paths=paths))
    again = result(gs.prepare(source="workspace", workspace_paths=paths))
    assert again["operation"] == first["operation"]
    other = gs.prepare(source="workspace", workspace_paths=paths[:1])
    assert_error(other, 409, "operation_pending")
    assert PendingOperation.objects.count() == 1


def test_cancel_ends_it_and_frees_the_slot(gs):
    paths = gs.write_many(2)
    operation = result(gs.prepare(source="workspace", workspace_paths=paths))["operation"]
    assert result(gs.cancel(operation))["gallery"]["items"] == []
    assert PendingOperation.objects.get().status == OperationStatus.CANCELLED
    assert_error(gs.confirm(operation), 409, "operation_cancelled")
    assert_error(gs.cancel(operation), 409, "operation_cancelled")
    assert gs.prepare(source="workspace", workspace_paths=paths[:1]).status_code == 200


def test_expired_operation_is_409_and_a_new_prepare_works(gs, settings):
    paths = gs.write_many(1)
    operation = result(gs.prepare(source="workspace", workspace_paths=paths))["operation"]
    PendingOperation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    gs.say("确认")
    assert_error(gs.confirm(operation), 409, "operation_expired")
    assert PendingOperation.objects.get().status == OperationStatus.EXPIRED
    assert gs.prepare(source="workspace", workspace_paths=paths).status_code == 200


def test_capacity_is_checked_at_prepare(gs, settings):
    settings.ARKME_GALLERY_CAPACITY = 2
    assert_error(gs.prepare(source="workspace", workspace_paths=gs.write_many(3)), 409, "capacity_exceeded",
                 details={"capacity": 2, "current": 0, "adding": 3})
    assert PendingOperation.objects.count() == 0


def test_reconciliation_marks_present_content_and_costs_no_capacity(gs, settings):
    paths = gs.write_many(2)
    gs.add_confirmed(paths)
    settings.ARKME_GALLERY_CAPACITY = 3
    more = gs.write_many(1, start=10)
    body = result(gs.prepare(source="workspace", workspace_paths=paths + more))
    assert [i["already_present"] for i in body["images"]] == [True, True, False]
    gs.say("确认")
    confirmed = result(gs.confirm(body["operation"]))
    assert (confirmed["added"], confirmed["already_present"]) == (1, 2)
    assert len(confirmed["gallery"]["items"]) == 3


def test_duplicate_content_in_one_batch_is_added_once(gs):
    a = gs.write("a.png", images.png((400, 400), (5, 5, 5)))
    b = gs.write("b.png", images.png((400, 400), (5, 5, 5)))
    body = result(gs.prepare(source="workspace", workspace_paths=[a, b]))
    assert [i["already_present"] for i in body["images"]] == [False, True]
    gs.say("确认")
    assert result(gs.confirm(body["operation"]))["added"] == 1


def test_another_accounts_extension_is_404(gs, world):
    response = gs.dsh.execute(gs.session, "arkme_extension_preview_add", {
        "action": "prepare", "extension": world.bob_ext.public_id, "source": "workspace",
        "workspace_paths": gs.write_many(1)})
    assert_error(response, 404, "unknown_extension")
    assert PendingOperation.objects.count() == 0


# --- confirm -------------------------------------------------------------------------------

@pytest.mark.parametrize("text,ok", [("确认", True), ("  确认。 ", True), ("确认!", True), ("确认！", True),
                                     ("确认.", True), ("确认。。", False), ("确认吗", False), ("yes", False),
                                     ("不确认", False), ("", False)])
def test_confirmation_text(text, ok):
    assert is_confirmation(text) is ok


def test_confirm_adds_in_prepared_order_and_writes_history(gs):
    paths = gs.write_many(3)
    body = gs.add_confirmed(paths)
    gallery = body["gallery"]
    assert (body["added"], body["already_present"]) == (3, 0)
    assert gallery["revision"] == 1 and [i["position"] for i in gallery["items"]] == [1, 2, 3]
    assert set(gallery["items"][0]) == {"item", "position", "width", "height", "format", "bytes"}
    shas = list(GalleryItem.objects.order_by("position").values_list("blob__sha256", flat=True))
    prepared = PendingOperation.objects.get().sources
    assert shas == [s["content_sha256"] for s in prepared]
    history = GalleryHistory.objects.get()
    assert (history.revision, history.action, history.items) == (1, "add", [i["item"] for i in gallery["items"]])
    assert PendingOperation.objects.get().status == OperationStatus.CONFIRMED


def test_confirm_without_a_new_确认_stays_pending(gs):
    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    assert_error(gs.confirm(operation), 409, "confirmation_required")
    gs.say("hmm, maybe")
    assert_error(gs.confirm(operation), 409, "confirmation_required")
    assert PendingOperation.objects.get().status == OperationStatus.PENDING
    gs.say("确认")
    assert gs.confirm(operation).status_code == 200


def test_确认_sent_before_the_prepare_does_not_count(gs):
    gs.say("确认")
    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    assert_error(gs.confirm(operation), 409, "confirmation_required")


def test_confirmed_operation_is_409_for_every_later_confirm(gs):
    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    gs.say("确认")
    assert gs.confirm(operation).status_code == 200
    assert_error(gs.confirm(operation), 409, "operation_confirmed")
    assert Gallery.objects.get(extension__public_id=gs.extension).revision == 1


def test_changed_source_bytes_end_the_operation(gs):
    paths = gs.write_many(2)
    operation = result(gs.prepare(source="workspace", workspace_paths=paths))["operation"]
    gs.write(paths[1], images.png((400, 400), (0, 0, 0)))
    gs.say("确认")
    assert assert_error(gs.confirm(operation), 422, "source_changed")["details"]["fields"] == ["workspace_paths[1]"]
    assert PendingOperation.objects.get().status == OperationStatus.FAILED
    assert GalleryItem.objects.count() == 0 and Blob.objects.count() == 0
    assert_error(gs.confirm(operation), 409, "operation_failed")


def test_deleted_source_ends_the_operation(gs):
    paths = gs.write_many(1)
    operation = result(gs.prepare(source="workspace", workspace_paths=paths))["operation"]
    (gs.workspace / paths[0]).unlink()
    gs.say("确认")
    assert_error(gs.confirm(operation), 422, "source_changed")


def test_capacity_is_checked_again_at_confirm(gs, settings):
    settings.ARKME_GALLERY_CAPACITY = 2
    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(2)))["operation"]
    settings.ARKME_GALLERY_CAPACITY = 1
    gs.say("确认")
    assert_error(gs.confirm(operation), 409, "capacity_exceeded")
    assert PendingOperation.objects.get().status == OperationStatus.FAILED
    assert GalleryItem.objects.count() == 0


def test_operation_of_another_session_or_extension_is_404(gs, dsh, world):
    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    gs.say("确认")
    assert_error(gs.confirm(operation, extension=world.bob_ext.public_id), 404, "unknown_operation")
    other = dsh.open_session(world.alice, workspace="ws")["session"]
    dsh.put(f"sessions/{other}/phases/attachments")
    response = dsh.execute(other, "arkme_extension_preview_add",
                           {"action": "confirm", "extension": gs.extension, "operation": operation})
    assert_error(response, 404, "unknown_operation")


def test_storage_failure_keeps_the_operation_and_a_retry_stores_only_the_missing(gs, monkeypatch):
    from arkme.kernel import storage as blobstore

    paths = gs.write_many(4)
    operation = result(gs.prepare(source="workspace", workspace_paths=paths))["operation"]
    gs.say("确认")
    real = blobstore.os.link  # a staged image is linked into its content address
    calls = {"blobs": 0}

    def failing_third(source, target):
        if "/blobs/" in str(target):
            calls["blobs"] += 1
            if calls["blobs"] == 3:
                raise OSError("disk gone")
        return real(source, target)

    monkeypatch.setattr(blobstore.os, "link", failing_third)
    failed = gs.confirm(operation)
    assert_error(failed, 503, "storage_unavailable")
    assert PendingOperation.objects.get().status == OperationStatus.PENDING
    # Every image but the third is stored; no row commits until the confirm does.
    from galleries.blobs.storage import BLOB_PREFIX, blob_store

    assert GalleryItem.objects.count() == 0 and Blob.objects.count() == 0
    assert len(list(blob_store().keys(BLOB_PREFIX))) == 3
    writes = []
    monkeypatch.setattr(blobstore.os, "link", lambda source, target: writes.append(str(target)) or real(source, target))
    assert result(gs.confirm(operation))["added"] == 4
    assert len([k for k in writes if "/blobs/" in k]) == 1
    assert Blob.objects.count() == 4


# --- sources ---------------------------------------------------------------------------------

def test_image_ref_source(gs, logos):
    body = result(gs.prepare(source="image_ref", image_ref=logos["alice"]))
    assert body["images"][0]["width"] == 512
    gs.say("确认")
    assert result(gs.confirm(body["operation"]))["added"] == 1


@pytest.mark.parametrize("which,code", [("bob", "invalid_image_ref"), ("tampered", "invalid_image_ref"),
                                        ("raw", "invalid_image_ref"), ("expired", "expired_image_ref")])
def test_bad_image_refs_are_refused(gs, logos, which, code, monkeypatch):
    ref = {"bob": logos["bob"], "tampered": logos["alice"][:-2] + "xx", "raw": "aim_123"}.get(which, logos["alice"])
    if which == "expired":
        from galleries.services import account_images as refs
        monkeypatch.setattr(refs, "IMAGE_REF_MAX_AGE", -1)
    assert assert_error(gs.prepare(source="image_ref", image_ref=ref), 400, code)["details"]["fields"] == ["image_ref"]
    assert PendingOperation.objects.count() == 0


def test_captured_attachments_in_order(gs):
    gs.say("here", files=[("a.png", images.png((400, 400), (1, 1, 1))), ("notes.txt", b"just text"),
                          ("c.jpg", images.image("JPEG", (500, 400)))])
    body = result(gs.prepare(source="attachments"))
    assert [(i["width"], i["format"]) for i in body["images"]] == [(400, "png"), (500, "jpeg")]
    picked = gs.prepare(source="attachments", attachment_indices=[3])
    assert_error(picked, 409, "operation_pending")
    gs.say("确认")
    assert result(gs.confirm(body["operation"]))["added"] == 2


def test_attachment_indices(gs):
    gs.say("", files=[("a.png", images.png()), ("notes.txt", b"text")])
    assert assert_error(gs.prepare(source="attachments", attachment_indices=[2]), 422,
                        "not_an_image")["details"]["fields"] == ["attachment_indices[0]"]
    assert assert_error(gs.prepare(source="attachments", attachment_indices=[1, 3]), 400,
                        "invalid_attachment_index")["details"]["fields"] == ["attachment_indices[1]"]
    assert gs.prepare(source="attachments", attachment_indices=[1]).status_code == 200


def test_an_integral_number_written_as_a_float_is_that_integer(gs):
    """JSON has one number type, and JSON Schema's integer accepts 1.0: it is index 1."""
    gs.say("", files=[("a.png", images.png()), ("notes.txt", b"text")])
    assert assert_error(gs.prepare(source="attachments", attachment_indices=[2.0]), 422,
                        "not_an_image")["details"]["fields"] == ["attachment_indices[0]"]
    assert assert_error(gs.prepare(source="attachments", attachment_indices=[1.5]), 400,
                        "invalid_arguments")["details"]["fields"] == ["attachment_indices[0]"]
    body = result(gs.prepare(source="attachments", attachment_indices=[1.0]))
    assert [i["index"] for i in body["images"]] == [1]


def test_no_captured_images_is_refused(gs):
    assert_error(gs.prepare(source="attachments"), 422, "no_captured_images")
    gs.say("text only")
    assert_error(gs.prepare(source="attachments"), 422, "no_captured_images")
    gs.say("", files=[("notes.txt", b"text")])
    assert_error(gs.prepare(source="attachments"), 422, "no_captured_images")


def test_attachments_of_the_prepare_message_are_reread_at_confirm(gs):
    gs.say("", files=[("a.png", images.png())])
    operation = result(gs.prepare(source="attachments"))["operation"]
    gs.say("确认")  # the latest message has no attachments now; the prepared ones still count
    assert result(gs.confirm(operation))["added"] == 1


def test_svg_from_the_workspace_is_stored_as_png(gs):
    name = gs.write("logo.svg", images.svg())
    body = result(gs.prepare(source="workspace", workspace_paths=[name]))
    assert body["images"][0]["format"] == "png"
    gs.say("确认")
    assert result(gs.confirm(body["operation"]))["gallery"]["items"][0]["format"] == "png"


def test_confirm_keeps_a_clean_png_again_without_decoding_it(gs, monkeypatch):
    import hashlib

    from PIL import Image

    from galleries.ingest.png_stream import png_image_chunks

    clean, turned = images.png_with_metadata(), images.png_with_exif_orientation()
    body = result(gs.prepare(source="workspace", workspace_paths=[gs.write("clean.png", clean),
                                                                  gs.write("turned.png", turned)]))
    gs.say("确认")
    opened = []
    real_open = Image.open

    def recording_open(source, *args, **kwargs):
        opened.append(source.getvalue() if hasattr(source, "getvalue") else source)
        return real_open(source, *args, **kwargs)

    monkeypatch.setattr(Image, "open", recording_open)
    assert result(gs.confirm(body["operation"]))["added"] == 2
    # The turned one is read and encoded again; the clean one is not even opened.
    assert turned in opened and clean not in opened
    assert Blob.objects.filter(sha256=hashlib.sha256(png_image_chunks(clean)).hexdigest()).exists()


def test_session_without_a_workspace_is_refused(dsh, world):
    session = dsh.open_session(world.alice)["session"]
    dsh.put(f"sessions/{session}/phases/attachments")
    response = dsh.execute(session, "arkme_extension_preview_add", {
        "action": "prepare", "extension": world.alice_ext.public_id, "source": "workspace", "workspace_paths": ["a.png"]})
    assert_error(response, 400, "no_workspace")


def test_refs_in_results_hold_no_internal_ids(gs, logos, world):
    payload = signing.loads(logos["alice"], salt=f"arkme.galleries.image_ref:{world.alice.public_id}")
    assert set(payload) == {"i"} and payload["i"].startswith("aim_")


# --- the session's life ends the pending add -------------------------------------------------

def test_closing_the_session_ends_its_pending_add(gs, dsh, world):
    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    assert dsh.delete(f"sessions/{gs.session}").status_code == 204
    assert PendingOperation.objects.get(public_id=operation).status == OperationStatus.EXPIRED
    # A new session may prepare at once instead of waiting out the TTL.
    view = dsh.open_session(world.alice, workspace="ws")
    dsh.put(f"sessions/{view['session']}/phases/attachments")
    gs.session = view["session"]
    assert gs.prepare(source="workspace", workspace_paths=gs.write_many(1, start=5)).status_code == 200


def test_an_idle_sessions_add_stops_blocking_before_the_purge(gs, dsh, world, settings):
    from datetime import timedelta

    from django.utils import timezone

    from arkme.conversations.models import AgentSession

    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    AgentSession.objects.filter(public_id=gs.session).update(
        last_seen_at=timezone.now() - timedelta(seconds=settings.ARKME_SESSION_IDLE_SECONDS + 60))
    view = dsh.open_session(world.alice, workspace="ws")
    dsh.put(f"sessions/{view['session']}/phases/attachments")
    gs.session = view["session"]
    assert gs.prepare(source="workspace", workspace_paths=gs.write_many(1, start=5)).status_code == 200
    assert PendingOperation.objects.get(public_id=operation).status == OperationStatus.EXPIRED


def test_the_idle_purge_ends_pending_adds(gs, settings):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from arkme.conversations.models import AgentSession

    operation = result(gs.prepare(source="workspace", workspace_paths=gs.write_many(1)))["operation"]
    AgentSession.objects.update(last_seen_at=timezone.now() - timedelta(days=30))
    call_command("arkme_sessions", "purge", stdout=__import__("io").StringIO())
    assert PendingOperation.objects.get(public_id=operation).status == OperationStatus.EXPIRED


def test_a_queue_outage_while_confirm_renders_an_svg_again_is_503_and_keeps_the_operation(gs, monkeypatch):
    import os

    from arkme.kernel.errors import QueueUnavailable
    from galleries.blobs.storage import blob_store, staging_key
    from galleries.ingest import process_image as pipeline

    name = gs.write("logo.svg", images.svg())
    operation = result(gs.prepare(source="workspace", workspace_paths=[name]))["operation"]
    # The prepare's render was collected, so confirm renders again.
    os.unlink(blob_store().storage.path(staging_key(
        PendingOperation.objects.get(public_id=operation).sources[0]["content_sha256"])))
    gs.say("确认")

    def down(*args, **kwargs):
        raise QueueUnavailable()

    monkeypatch.setattr(pipeline, "render_png_via_task", down)
    assert_error(gs.confirm(operation), 503, "task_queue_unavailable")
    assert PendingOperation.objects.get(public_id=operation).status == OperationStatus.PENDING
    monkeypatch.undo()
    assert result(gs.confirm(operation))["added"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_confirm_commits_its_images_and_its_gallery_change_once(gs):
    """The blob rows of the images an add stores are written with its items and history, in one
    transaction: a confirm of several new images commits once."""
    import re

    from django.db import connection

    paths = gs.write_many(3)
    operation = result(gs.prepare(source="workspace", workspace_paths=paths))["operation"]
    gs.say("确认")
    writes: list[tuple[str, int]] = []
    blocks = {"count": 0, "open": False}

    def record(execute, sql, params, many, context):
        inside = connection.in_atomic_block
        if inside and not blocks["open"]:
            blocks["count"] += 1
        blocks["open"] = inside
        written = re.match(r'\s*(?:INSERT\b.*?\bINTO|UPDATE|DELETE\s+FROM)\s+"(galleries_\w+)"', sql, re.S | re.I)
        if written:
            writes.append((written[1], blocks["count"] if inside else 0))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert result(gs.confirm(operation))["added"] == 3
    tables = {table for table, _ in writes}
    assert {"galleries_blob", "galleries_galleryitem", "galleries_galleryhistory"} <= tables, writes
    assert len({block for _, block in writes}) == 1 and 0 not in {block for _, block in writes}, writes


def test_prepare_keeps_no_encoded_image_and_confirm_stores_what_prepare_fingerprinted(gs, encoder_keeps):
    """A turned photograph is encoded at prepare only to fingerprint it: the encoder's output
    streams into the hash and is never held. Confirm encodes again, keeps the bytes, and stores
    exactly the content prepare promised."""
    kept = encoder_keeps
    name = gs.write("turned.jpg", images.jpeg_with_gps_and_orientation())
    prepared = result(gs.prepare(source="workspace", workspace_paths=[name]))
    assert kept == [False]
    promised = PendingOperation.objects.get(public_id=prepared["operation"]).sources[0]["content_sha256"]
    gs.say("确认")
    confirmed = result(gs.confirm(prepared["operation"]))
    assert kept == [False, True] and confirmed["added"] == 1
    from galleries.models import Blob

    assert Blob.objects.filter(sha256=promised).exists()


# --- an SVG is rendered once an add ----------------------------------------------------------

def _counting_renders(monkeypatch):
    from galleries.ingest import process_image as pipeline

    renders = []
    real = pipeline.render_png_via_task

    def counted(*args, **kwargs):
        renders.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "render_png_via_task", counted)
    return renders


def test_an_svg_add_renders_once_and_confirm_stores_the_prepares_render(gs, monkeypatch):
    from galleries.blobs.storage import blob_key, blob_store

    renders = _counting_renders(monkeypatch)
    names = [gs.write("a.svg", images.svg()), gs.write("b.svg", images.svg('<rect x="10" y="10" width="50" height="50" fill="blue"/>'))]
    operation = result(gs.prepare(source="workspace", workspace_paths=names))["operation"]
    assert len(renders) == 2
    gs.say("确认")
    assert result(gs.confirm(operation))["added"] == 2
    assert len(renders) == 2  # confirm found each render by its content address
    for source in PendingOperation.objects.get(public_id=operation).sources:
        stored = blob_store().read(blob_key(source["content_sha256"]))
        assert __import__("hashlib").sha256(stored).hexdigest() == source["content_sha256"]


@pytest.mark.parametrize("damage", ["gone", "damaged"])
def test_a_staged_render_gone_or_damaged_is_rendered_again(gs, monkeypatch, damage):
    import hashlib

    from galleries.blobs.storage import blob_key, blob_store, staging_key

    renders = _counting_renders(monkeypatch)
    operation = result(gs.prepare(source="workspace", workspace_paths=[gs.write("a.svg", images.svg())]))["operation"]
    sha = PendingOperation.objects.get(public_id=operation).sources[0]["content_sha256"]
    staged = blob_store().storage.path(staging_key(sha))
    if damage == "gone":
        __import__("os").unlink(staged)
    else:
        with open(staged, "r+b") as handle:
            handle.seek(100)
            handle.write(b"\x00" * 8)
    gs.say("确认")
    assert result(gs.confirm(operation))["added"] == 1
    assert len(renders) == 2
    assert hashlib.sha256(blob_store().read(blob_key(sha))).hexdigest() == sha


def test_a_storage_fault_while_staging_a_render_costs_a_second_render_not_the_prepare(gs, monkeypatch):
    from arkme.kernel.errors import StorageUnavailable
    from galleries.blobs import services

    renders = _counting_renders(monkeypatch)

    def down(image):
        raise StorageUnavailable()

    monkeypatch.setattr(services, "blob_stage", down)
    operation = result(gs.prepare(source="workspace", workspace_paths=[gs.write("a.svg", images.svg())]))["operation"]
    assert PendingOperation.objects.get(public_id=operation).sources[0]["staged"] is False
    monkeypatch.undo()
    renders = _counting_renders(monkeypatch)
    gs.say("确认")
    assert result(gs.confirm(operation))["added"] == 1
    assert len(renders) == 1
