"""Content-addressed storage on local files and on S3: no overwrite, GC, verification."""
from __future__ import annotations

import io
from datetime import timedelta

import boto3
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from arkme.kernel.errors import StorageUnavailable
from arkme.kernel.storage import object_store
from galleries.blobs import services as blob_services
from galleries.blobs.services import blobs_collect_garbage, blobs_store_missing, blobs_verify
from galleries.blobs.storage import blob_key, staging_key
from galleries.ingest.process_image import process_image, sha256_hex
from galleries.models import Blob
from tests.support import images
from tests.support.errors import assert_error


@pytest.fixture(params=["filesystem", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request):
    if request.param == "s3":
        request.getfixturevalue("s3")
    return request.param


def test_put_if_absent_never_overwrites(backend):
    store = object_store()
    assert store.put_if_absent("blobs/ab/key", b"first") is True
    assert store.put_if_absent("blobs/ab/key", b"second") is False
    assert store.read("blobs/ab/key") == b"first"


def test_a_copy_of_a_stored_object_is_put_once_and_never_overwrites(backend):
    store = object_store()
    store.put_if_absent("staging/one", b"staged")
    assert store.put_copy_if_absent("blobs/ab/one", "staging/one", b"staged") is True
    store.delete("staging/one")  # the copy outlives its source (a link on local files)
    assert store.read("blobs/ab/one") == b"staged"
    assert store.put_copy_if_absent("blobs/ab/one", "staging/two", b"other") is False
    assert store.read("blobs/ab/one") == b"staged"
    # A source that is gone is written from the bytes the caller holds.
    assert store.put_copy_if_absent("blobs/ab/two", "staging/gone", b"held") is True
    assert store.read("blobs/ab/two") == b"held"


def test_listing_sees_what_was_stored(backend):
    store = object_store()
    store.put_if_absent("blobs/aa/one", b"1")
    store.put_if_absent("staging/two", b"2")
    assert [key for key, _ in store.keys("blobs/")] == ["blobs/aa/one"]
    assert [key for key, _ in store.keys("staging/")] == ["staging/two"]


@pytest.mark.django_db
def test_store_missing_is_idempotent_and_content_addressed(backend):
    image = process_image(images.png())
    assert blobs_store_missing([image]) == 1
    assert blobs_store_missing([image]) == 0
    store = object_store()
    assert sha256_hex(store.read(blob_key(image.sha256))) == image.sha256
    assert not store.exists(staging_key(image.sha256))  # staging is cleaned up
    blob = Blob.objects.get()
    assert (blob.sha256, blob.width, blob.height, blob.size) == (image.sha256, 400, 400, len(image.data))


@pytest.mark.django_db
def test_gc_removes_only_unreferenced_old_blobs_after_commit(backend, gs, django_capture_on_commit_callbacks):
    kept = gs.add_confirmed(gs.write_many(1))
    orphan = process_image(images.png((400, 400), (9, 9, 9)))
    blobs_store_missing([orphan])
    object_store().put_if_absent(blob_key("f" * 64), b"no row knows me")
    assert blobs_collect_garbage().total == 0  # nothing is old enough yet
    Blob.objects.update(created_at=timezone.now() - timedelta(days=1))
    dry = blobs_collect_garbage(dry_run=True, grace=timedelta(0))
    assert dry.blobs == [orphan.sha256] and dry.orphans == [blob_key("f" * 64)]
    assert Blob.objects.count() == 2
    store = object_store()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = blobs_collect_garbage(grace=timedelta(0))
    assert report.blobs == [orphan.sha256]
    assert store.exists(blob_key(orphan.sha256))  # the row is gone, the object waits for the commit
    for callback in callbacks:
        callback()
    assert not store.exists(blob_key(orphan.sha256)) and not store.exists(blob_key("f" * 64))
    assert Blob.objects.count() == 1 and len(kept["gallery"]["items"]) == 1
    assert [key for key, _ in store.keys("blobs/")] == [blob_key(Blob.objects.get().sha256)]


@pytest.mark.django_db
def test_gc_deletes_any_number_of_unreferenced_blobs_a_batch_per_transaction(backend, monkeypatch,
                                                                              django_capture_on_commit_callbacks):
    monkeypatch.setattr(blob_services, "GC_BATCH", 2)
    orphans = [process_image(images.png((320, 320), (c, c, c))) for c in range(5)]
    blobs_store_missing(orphans)
    Blob.objects.update(created_at=timezone.now() - timedelta(days=1))
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True) as callbacks:
        report = blobs_collect_garbage(grace=timedelta(0))
    assert sorted(report.blobs) == sorted(image.sha256 for image in orphans)
    assert len(callbacks) == 3  # 2 + 2 + 1 rows, each batch's objects after its own commit
    assert not Blob.objects.exists()
    assert not [key for key, _ in object_store().keys("blobs/")]
    table = connection.ops.quote_name(Blob._meta.db_table)
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE") and table in q["sql"]]
    assert len(deletes) == 3


@pytest.mark.django_db
def test_verify_finds_corrupted_and_missing_blobs(backend):
    good, bad, gone = (process_image(images.png((400, 400), (c, c, c))) for c in (1, 2, 3))
    blobs_store_missing([good, bad, gone])
    store = object_store()
    store.delete(blob_key(bad.sha256))
    store.put_if_absent(blob_key(bad.sha256), b"corrupted bytes")
    store.delete(blob_key(gone.sha256))
    report = blobs_verify()
    assert report.checked == 3 and report.mismatched == [bad.sha256] and report.missing == [gone.sha256]
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("arkme_blobs", "verify", stdout=out, stderr=err)
    assert "3 blob(s) checked" in out.getvalue()


@pytest.mark.django_db
def test_gc_command_summary(backend):
    out = io.StringIO()
    call_command("arkme_blobs", "gc", "--dry-run", stdout=out)
    assert out.getvalue().strip().splitlines()[-1].startswith("Would delete 0 blob(s)")


@pytest.mark.s3
@pytest.mark.django_db
def test_whole_gallery_flow_on_s3(s3, gs, settings):
    body = gs.add_confirmed(gs.write_many(3))
    assert len(body["gallery"]["items"]) == 3
    client = boto3.client("s3", endpoint_url=settings.STORAGES["blobs"]["OPTIONS"]["endpoint_url"], region_name="us-east-1")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3).get("Contents", [])]
    assert sorted(k for k in keys if k.startswith("blobs/")) == sorted(blob_key(b.sha256) for b in Blob.objects.all())
    assert not [k for k in keys if k.startswith("staging/")]
    acl = client.get_object_acl(Bucket=s3, Key=keys[0])
    assert all(g["Grantee"].get("URI") is None for g in acl["Grants"])  # private: no public grant


@pytest.mark.s3
@pytest.mark.django_db
def test_unreachable_s3_is_503_and_nothing_changes(s3, gs, settings):
    operation = gs.prepare(source="workspace", workspace_paths=gs.write_many(2)).json()["result"]["operation"]
    gs.say("确认")
    broken = {**settings.STORAGES["blobs"], "OPTIONS": {**settings.STORAGES["blobs"]["OPTIONS"],
                                                        "endpoint_url": "http://127.0.0.1:9"}}
    settings.STORAGES = {**settings.STORAGES, "blobs": broken}
    response = gs.confirm(operation)
    assert_error(response, 503, "storage_unavailable")
    assert gs.gallery()["items"] == []
    from galleries.models import PendingOperation
    assert PendingOperation.objects.get().status == "pending"


def test_storage_errors_become_storage_unavailable(monkeypatch):
    store = object_store()
    monkeypatch.setattr(store, "_put", lambda key, data: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(StorageUnavailable):
        store.put_if_absent("blobs/x", b"1")


def test_a_programming_error_in_storage_is_not_reported_as_an_outage(monkeypatch):
    """Only the storage libraries' own errors mean "retry"; a bug must surface as one (a 500)."""
    store = object_store()
    monkeypatch.setattr(store, "_put", lambda key, data: (_ for _ in ()).throw(TypeError("a bug")))
    with pytest.raises(TypeError):
        store.put_if_absent("blobs/x", b"1")


def test_a_programming_error_during_confirm_is_a_500_without_internals(gs, monkeypatch):
    from arkme.kernel.storage import LocalObjectStore

    paths = gs.write_many(1)
    operation = gs.prepare(source="workspace", workspace_paths=paths).json()["result"]["operation"]
    gs.say("确认")
    monkeypatch.setattr(LocalObjectStore, "_put", lambda self, key, data: (_ for _ in ()).throw(TypeError("a bug")))
    gs.dsh.api.raise_request_exception = False
    response = gs.confirm(operation)
    assert_error(response, 500, "internal_error")
    assert "bug" not in response.content.decode()


def test_sniffing_an_s3_attachment_reads_only_its_first_bytes(s3, gs, monkeypatch):
    from arkme.kernel.storage import S3ObjectStore

    ranges = []
    real = S3ObjectStore.read_at_most
    monkeypatch.setattr(S3ObjectStore, "read_at_most",
                        lambda self, key, limit: ranges.append(limit) or real(self, key, limit))
    assert gs.say("", files=[("a.png", images.png((400, 400), (1, 2, 3))), ("notes.txt", b"x" * 100_000)]).status_code == 201
    assert gs.prepare(source="attachments").status_code == 200
    assert 513 in ranges  # the sniff asked for 512 bytes and one more, not the whole object


@pytest.mark.django_db
def test_the_store_task_moves_bytes_and_the_caller_records_the_row(backend):
    from galleries.blobs.services import blob_stage, blobs_record
    from galleries.blobs.storage import blob_key, blob_store
    from galleries.blobs.tasks import store_blob

    image = process_image(images.png((400, 400)))
    staged = blob_stage(image)
    assert store_blob.apply(args=[image.sha256]).get() == {"ok": {"sha256": image.sha256, "created": True}}
    assert blob_store().exists(blob_key(image.sha256)) and not Blob.objects.exists()
    assert set(blobs_record([staged])) == {image.sha256}
    assert Blob.objects.get(sha256=image.sha256).width == image.width


@pytest.mark.django_db
def test_promoting_an_image_already_stored_verifies_it_and_repairs_a_damaged_one(backend):
    from galleries.blobs.promote import blob_promote
    from galleries.blobs.services import blob_stage
    from galleries.blobs.storage import blob_key, blob_store

    image = process_image(images.png((400, 400)))
    blob_stage(image)
    assert blob_promote(sha256=image.sha256)["created"] is True
    assert blob_promote(sha256=image.sha256)["created"] is False  # a retry, or a concurrent task: nothing staged
    store = blob_store()
    store.delete(blob_key(image.sha256))
    store.put_if_absent(blob_key(image.sha256), b"damaged")
    blob_stage(image)
    blob_promote(sha256=image.sha256)
    assert store.read(blob_key(image.sha256)) == image.data


def test_small_images_share_a_store_task_and_a_large_one_has_its_own(monkeypatch):
    from galleries.blobs.services import STORE_TASK_BYTES, StagedImage, blobs_store_staged

    sent: list[list[str]] = []
    monkeypatch.setattr(blob_services, "run_all_and_wait",
                        lambda task, calls, timeout=None: sent.extend(batch for (batch,) in calls))
    images_ = [StagedImage(f"{n:064x}", 1, 1, "png", size, stored=n == 6)
               for n, size in [(1, 1000), (2, 2000), (3, STORE_TASK_BYTES - 100), (4, STORE_TASK_BYTES), (5, 10),
                               (6, 10)]]
    assert blobs_store_staged(images_) == 5  # the sixth is stored already
    assert sent == [[f"{1:064x}", f"{2:064x}"], [f"{3:064x}"], [f"{4:064x}"], [f"{5:064x}"]]


@pytest.mark.django_db
def test_a_store_task_promotes_every_image_it_can_and_then_answers_the_failure(backend):
    from arkme.kernel.errors import ContentRejected
    from galleries.blobs.promote import blobs_promote
    from galleries.blobs.services import blob_stage
    from galleries.blobs.storage import blob_store
    from galleries.blobs.tasks import store_blobs

    first, damaged, last = (process_image(images.png((400, 400), (c, 9, 9))) for c in (1, 2, 3))
    for image in (first, damaged, last):
        blob_stage(image)
    store = blob_store()
    store.delete(staging_key(damaged.sha256))
    store.put_if_absent(staging_key(damaged.sha256), b"damaged")
    with pytest.raises(ContentRejected):
        blobs_promote(shas=[first.sha256, damaged.sha256, last.sha256])
    assert store.exists(blob_key(first.sha256)) and store.exists(blob_key(last.sha256))
    assert not store.exists(blob_key(damaged.sha256))
    blob_stage(damaged)
    answer = store_blobs.apply(args=([first.sha256, damaged.sha256],)).get()
    assert answer == {"ok": [{"sha256": first.sha256, "created": False}, {"sha256": damaged.sha256, "created": True}]}
