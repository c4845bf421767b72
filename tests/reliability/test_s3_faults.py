"""S3 over HTTP (moto's standalone server): a put failing at each position of a 20-image
confirm leaves the gallery unchanged, a retry stores only what is missing, and garbage
collection leaves no orphan."""
from __future__ import annotations

from datetime import timedelta

import boto3
import pytest
from django.conf import settings

from arkme.kernel import storage as blobstore
from galleries.blobs.services import blobs_collect_garbage
from galleries.blobs.storage import blob_key
from galleries.models import Blob, Extension, Gallery, OperationStatus, PendingOperation
from galleries.services.extensions import extension_create
from tests.support import images
from tests.support.errors import assert_error

pytestmark = [pytest.mark.s3, pytest.mark.django_db]
BATCH = 20
READ_BATCH = 6


def bucket_keys(bucket: str) -> list[str]:
    client = boto3.client("s3", endpoint_url=settings.STORAGES["blobs"]["OPTIONS"]["endpoint_url"], region_name="us-east-1")
    return sorted(o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
                  for o in page.get("Contents", []))


def test_a_failed_put_at_every_position_is_recovered(figures, s3, gs, world, monkeypatch, django_capture_on_commit_callbacks):
    real_put = blobstore.S3ObjectStore._put
    recovered = 0
    for k in range(1, BATCH + 1):
        ext = extension_create(owner=world.alice, name=f"fault-{k}")
        gs.extension = ext.public_id
        paths = [gs.write(f"k{k}/{i}.png", images.png((400, 400), (k, i, 200))) for i in range(BATCH)]
        operation = gs.prepare(source="workspace", workspace_paths=paths).json()["result"]["operation"]
        gs.say("确认")
        puts = {"n": 0}

        def failing(self, key, data, k=k, puts=puts):
            if key.startswith("blobs/"):
                puts["n"] += 1
                if puts["n"] == k:
                    raise ConnectionError("S3 went away")
            return real_put(self, key, data)

        monkeypatch.setattr(blobstore.S3ObjectStore, "_put", failing)
        failed = gs.confirm(operation)
        gallery = Gallery.objects.get(extension=ext)
        unchanged = (failed.status_code == 503 and gallery.revision == 0 and not gallery.items.exists()
                     and PendingOperation.objects.get(public_id=operation).status == OperationStatus.PENDING)
        retry_puts = []
        monkeypatch.setattr(blobstore.S3ObjectStore, "_put",
                            lambda self, key, data: retry_puts.append(key) or real_put(self, key, data))
        done = gs.confirm(operation)
        # Every put but the failed one went through the first time: the retry stores one blob.
        stored_only_missing = len([key for key in retry_puts if key.startswith("blobs/")]) == 1
        complete = done.status_code == 200 and done.json()["result"]["added"] == BATCH
        if unchanged and stored_only_missing and complete:
            recovered += 1
        assert unchanged, (k, failed.content)
        assert_error(failed, 503, "storage_unavailable")
        assert stored_only_missing, (k, retry_puts)
        assert complete, (k, done.content)
    figures.add("s3_fault_positions", BATCH)
    figures.add("s3_fault_recovered", recovered)

    # Empty every gallery, collect garbage: what is left in the bucket is exactly what rows know.
    Extension.objects.filter(name__startswith="fault-").delete()
    Blob.objects.update(created_at=Blob.objects.first().created_at - timedelta(days=1))
    with django_capture_on_commit_callbacks(execute=True):
        blobs_collect_garbage(grace=timedelta(0))
    left = bucket_keys(s3)
    orphans = [key for key in left if key not in {blob_key(b.sha256) for b in Blob.objects.all()}]
    figures.add("s3_orphans", len(orphans))
    assert orphans == [] and not [key for key in left if key.startswith("staging/")]


def test_a_failed_read_at_every_position_of_confirm_keeps_the_operation(figures, s3, gs, world, monkeypatch):
    """Confirm re-reads every source; an outage on any read is a 503 that leaves the operation
    pending (never source_changed), and the retry completes it."""
    from arkme.kernel.storage import S3ObjectStore

    real_read = S3ObjectStore._get_range
    recovered = 0
    for k in range(1, READ_BATCH + 1):
        ext = extension_create(owner=world.alice, name=f"read-fault-{k}")
        gs.extension = ext.public_id
        files = [(f"{i}.png", images.png((400, 400), (k, i, 99))) for i in range(READ_BATCH)]
        assert gs.say("", files=files).status_code == 201
        operation = gs.prepare(source="attachments").json()["result"]["operation"]
        gs.say("确认")
        # The confirmation message has no files; the operation still names the earlier ones.
        reads = {"n": 0}

        def failing(self, key, limit, k=k, reads=reads):
            if key.startswith("captured/"):
                reads["n"] += 1
                if reads["n"] == k:
                    raise ConnectionError("S3 went away")
            return real_read(self, key, limit)

        monkeypatch.setattr(S3ObjectStore, "_get_range", failing)
        failed = gs.confirm(operation)
        pending = PendingOperation.objects.get(public_id=operation).status == OperationStatus.PENDING
        monkeypatch.setattr(S3ObjectStore, "_get_range", real_read)
        done = gs.confirm(operation)
        if failed.status_code == 503 and pending and done.status_code == 200 and done.json()["result"]["added"] == READ_BATCH:
            recovered += 1
        assert_error(failed, 503, "storage_unavailable")
    figures.add("s3_read_fault_positions", READ_BATCH)
    figures.add("s3_read_fault_recovered", recovered)
    assert recovered == READ_BATCH
