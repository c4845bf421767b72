"""Blob services: staging, storing through the store task, garbage collection and verification."""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable, Sequence

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from arkme.kernel.errors import StorageUnavailable
from arkme.kernel.sql import column, default_db, hot_cursor, table
from arkme.kernel.tasking import run_all_and_wait

from ..ingest.process_image import ProcessedImage, sha256_hex
from ..ingest.thumbnail import THUMBNAIL_SIDE, make_thumbnail
from ..models import AccountImage, Blob, GalleryItem
from .storage import BLOB_PREFIX, STAGING_PREFIX, THUMBNAIL_PREFIX, blob_key, blob_store, staging_key, thumbnail_key
from .tasks import store_blobs

GC_GRACE = timedelta(hours=1)
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StagedImage:
    """An image whose bytes wait in staging (or are already stored): its address and size."""

    sha256: str
    width: int
    height: int
    format: str
    size: int
    stored: bool


@functools.cache
def _stored_sql(vendor: str, count: int) -> str:
    marks = ", ".join(["%s"] * count)
    return (f"SELECT {column(Blob, 'sha256')}, {column(Blob, 'size')} FROM {table(Blob)}"  # noqa: S608
            f" WHERE {column(Blob, 'sha256')} IN ({marks})")


def blobs_stored(shas: Sequence[str]) -> dict[str, int]:
    """The size of each of these images that is stored (has its row), by fingerprint: one
    statement for a whole add."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    with hot_cursor() as cursor:
        cursor.execute(_stored_sql(default_db().vendor, len(wanted)), wanted)
        return dict(cursor.fetchall())


def blob_stage(image: ProcessedImage, *, stored: bool | None = None) -> StagedImage:
    """Put an image's bytes where the store task finds them, unless it is stored already.
    ``stored``: whether it is, when the caller asked already (``blobs_stored``)."""
    if stored is None:
        stored = Blob.objects.filter(sha256=image.sha256).exists()
    if not stored:
        blob_store().put_if_absent(staging_key(image.sha256), image.data)
    return StagedImage(image.sha256, image.width, image.height, image.format, len(image.data), stored)


def blob_stage_ahead(image: ProcessedImage) -> bool:
    """Stage an image a later step will store (an SVG's render at prepare, kept for confirm).
    Best effort: it only saves work, so a storage fault is logged and answered False, and
    the later step derives the image again."""
    try:
        blob_stage(image)
    except StorageUnavailable:
        logger.warning("an image was not staged ahead; it will be derived again")
        return False
    return True


def blob_staged(sha256: str, width: int, height: int, fmt: str, *, stored_size: int | None) -> StagedImage | None:
    """The image with fingerprint ``sha256`` when it is stored already (``stored_size``, from
    ``blobs_stored``: None when it is not), or staged with exactly those bytes (the staged
    copy's content address is checked here, not trusted); None otherwise. A storage fault
    propagates: a confirm that cannot read the store cannot store."""
    if stored_size is not None:
        return StagedImage(sha256, width, height, fmt, stored_size, stored=True)
    try:
        data = blob_store().read(staging_key(sha256))
    except FileNotFoundError:
        return None
    if sha256_hex(data) != sha256:
        blob_store().delete(staging_key(sha256))  # damaged: staging the image again must not find it
        return None
    return StagedImage(sha256, width, height, fmt, len(data), stored=False)


# The bytes one store task moves at most (a larger image has a task to itself): small images
# share a task, whose own cost would otherwise outweigh moving them, and large ones are moved
# side by side by as many workers.
STORE_TASK_BYTES = 8 * 1024 * 1024


def _store_batches(images: Sequence[StagedImage]) -> list[list[str]]:
    batches: list[list[str]] = []
    size = STORE_TASK_BYTES
    for image in images:
        if size + image.size > STORE_TASK_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(image.sha256)
        size += image.size
    return batches


def blobs_store_staged(images: Sequence[StagedImage], *, timeout: float | None = None) -> int:
    """Move every staged image to its content address (store tasks of up to ``STORE_TASK_BYTES``
    each, idempotent); a partial failure retries only the missing. Records no row: the caller
    does, in its transaction (``blobs_record``). Returns how many were moved."""
    missing = {image.sha256: image for image in images if not image.stored}
    if missing:
        # One deadline for them all, which each task carries: none runs after the caller gave up.
        run_all_and_wait(store_blobs, [(batch,) for batch in _store_batches(list(missing.values()))],
                         timeout=timeout)
    return len(missing)


_RECORDED = ("sha256", "size", "width", "height", "format", "created_at")


@functools.cache
def _record_sql(vendor: str, count: int) -> str:
    rows = ", ".join([f"({', '.join(['%s'] * len(_RECORDED))})"] * count)
    return (f"INSERT INTO {table(Blob)} ({', '.join(column(Blob, name) for name in _RECORDED)}) VALUES {rows}"  # noqa: S608
            f" ON CONFLICT ({column(Blob, 'sha256')}) DO NOTHING")


@functools.cache
def _ids_sql(vendor: str, count: int) -> str:
    return (f"SELECT {column(Blob, 'sha256')}, {column(Blob, 'id')} FROM {table(Blob)}"  # noqa: S608
            f" WHERE {column(Blob, 'sha256')} IN ({', '.join(['%s'] * count)})")


def blobs_record(images: Sequence[StagedImage]) -> dict[str, int]:
    """The row ids of stored images, by fingerprint, their rows made where missing: two
    statements whatever their number (a concurrent confirm that recorded one first is no
    error), run in the caller's transaction so they commit with what references them."""
    wanted = {image.sha256: image for image in images}
    if not wanted:
        return {}
    db = default_db()
    missing = [image for image in wanted.values() if not image.stored]
    with hot_cursor() as cursor:
        if missing:
            at = db.ops.adapt_datetimefield_value(timezone.now())
            cursor.execute(_record_sql(db.vendor, len(missing)), [
                value for i in missing for value in (i.sha256, i.size, i.width, i.height, i.format, at)])
        cursor.execute(_ids_sql(db.vendor, len(wanted)), list(wanted))
        return dict(cursor.fetchall())


def blobs_store_missing(images: Sequence[ProcessedImage], *, timeout: float | None = None) -> int:
    """Stage, store and record images held in memory (the account library, tests)."""
    staged = [blob_stage(image) for image in images]
    stored = blobs_store_staged(staged, timeout=timeout)
    blobs_record(staged)
    return stored


def blob_thumbnail(sha256: str, side: int = THUMBNAIL_SIDE) -> bytes:
    """The blob's small rendition, made on first use and kept in storage (content-addressed
    like the blob, so it is never stale); ``FileNotFoundError`` when the blob is missing."""
    store = blob_store()
    key = thumbnail_key(sha256, side)
    try:
        return store.read(key)
    except FileNotFoundError:
        pass
    data = make_thumbnail(store.read(blob_key(sha256)), side)
    store.put_if_absent(key, data)
    return data


# Unreferenced blob rows deleted per transaction by the garbage collection.
GC_BATCH = 1000


@dataclass
class GcReport:
    blobs: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    staging: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.blobs) + len(self.orphans) + len(self.staging)


def blobs_collect_garbage(*, dry_run: bool = False, grace: timedelta = GC_GRACE) -> GcReport:
    """Delete blobs nothing references, stored objects no row knows, and stale staging.

    Rows go a batch per transaction (``GC_BATCH``: a statement's parameters stay far below
    PostgreSQL's 65,535 however many blobs are unreferenced); each batch's objects are deleted
    only after its transaction commits, so a rollback never leaves a row pointing at nothing.
    """
    cutoff = timezone.now() - grace
    report = GcReport()
    store = blob_store()
    unreferenced = Blob.objects.filter(created_at__lt=cutoff).exclude(
        Exists(GalleryItem.objects.filter(blob=OuterRef("pk")))
    ).exclude(Exists(AccountImage.objects.filter(blob=OuterRef("pk"))))
    after = 0
    while True:
        with transaction.atomic():
            rows = list(unreferenced.filter(pk__gt=after).order_by("pk").select_for_update()
                        .values_list("pk", "sha256")[:GC_BATCH])
            if not rows:
                break
            after = rows[-1][0]
            shas = [sha for _, sha in rows]
            report.blobs += shas
            if not dry_run:
                Blob.objects.filter(pk__in=[pk for pk, _ in rows]).delete()
                transaction.on_commit(functools.partial(store.delete_quietly, [blob_key(sha) for sha in shas]))
    known = set(Blob.objects.values_list("sha256", flat=True))
    for key, modified in store.keys(BLOB_PREFIX):
        sha = key.rsplit("/", 1)[-1]
        if sha not in known and sha not in report.blobs and modified < cutoff:
            report.orphans.append(key)
    for key, modified in store.keys(STAGING_PREFIX):
        if modified < cutoff:
            report.staging.append(key)
    for key, modified in store.keys(THUMBNAIL_PREFIX):
        # thumbs/ab/<sha>-<side>.png: a rendition of a blob that is gone.
        sha = key.rsplit("/", 1)[-1].split("-", 1)[0]
        if sha not in known and modified < cutoff:
            report.orphans.append(key)
    if not dry_run:
        store.delete_quietly(report.orphans + report.staging)
    return report


@dataclass
class VerifyReport:
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)


def blobs_verify(progress: Callable[[int, int], None] | None = None) -> VerifyReport:
    """Re-hash every stored blob and report what is missing or does not match its address."""
    store = blob_store()
    report = VerifyReport()
    total = Blob.objects.count()
    for blob in Blob.objects.order_by("pk").iterator(chunk_size=500):
        try:
            data = store.read(blob_key(blob.sha256))
        except FileNotFoundError:
            report.missing.append(blob.sha256)
        else:
            if sha256_hex(data) != blob.sha256:
                report.mismatched.append(blob.sha256)
        report.checked += 1
        if progress:
            progress(report.checked, total)
    return report
