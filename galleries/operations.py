"""Adding images to a gallery: prepare, then the human's 确认, then confirm (or cancel).

prepare:  ownership, reconciliation, capacity, then a pending operation; nothing else written.
confirm:  the 确认 is the latest direct message; same target; every source re-read with an
          unchanged fingerprint; missing blobs stored; then one transaction that locks the
          gallery, reconciles and checks capacity again, appends, bumps the revision.
"""
from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.errors import ArkmeError, Conflict, ContentRejected, NotFound
from arkme.models import Account
from toolregistry import conversation

from .blobs import StagedImage, blob_stage, blobs_store_staged
from .models import Blob, Extension, Gallery, GalleryHistory, GalleryItem, OperationStatus, PendingOperation
from .pipeline import process_image, reproduce_image
from .selectors import extension_for_owner, gallery_shas, gallery_view
from .sources import SourceGone, read_source, resolve_handles

CONFIRMATION = "确认"
TRAILING = "。.!！"


def is_confirmation(text: str) -> bool:
    text = (text or "").strip()
    if text and text[-1] in TRAILING:
        text = text[:-1].rstrip()
    return text == CONFIRMATION


def _digest(extension: Extension, handles: list[tuple[dict, str]]) -> str:
    canonical = json.dumps([extension.pk, [h for h, _ in handles]], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _operation_codes(status: str) -> Conflict:
    return Conflict(f"This operation is {status}; prepare again.", code=f"operation_{status}")


def _end(operation: PendingOperation, status: str, failure: str = "") -> None:
    PendingOperation.objects.filter(pk=operation.pk, status=OperationStatus.PENDING).update(
        status=status, failure_code=failure, ended_at=timezone.now()
    )
    operation.status = status


def _expire_if_due(operation: PendingOperation) -> bool:
    if operation.status == OperationStatus.PENDING and operation.expires_at <= timezone.now():
        _end(operation, OperationStatus.EXPIRED)
        return True
    return False


def _images_view(operation: PendingOperation, present: set[str]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    images = []
    for index, source in enumerate(operation.sources, start=1):
        sha = source["content_sha256"]
        images.append({
            "index": index, "width": source["width"], "height": source["height"],
            "format": source["format"], "already_present": sha in present or sha in seen,
        })
        seen.add(sha)
    return images


def _question(extension: Extension, adding: int, after: int, present: int) -> str:
    noun = "image" if adding == 1 else "images"
    extra = f" ({present} already in it will be skipped)" if present else ""
    return (
        f"Add {adding} {noun} to the preview gallery of “{extension.name}”{extra}? "
        f"The gallery will then have {after} of {settings.ARKME_GALLERY_CAPACITY} images. "
        f"Reply {CONFIRMATION} to confirm."
    )


def operation_view(operation: PendingOperation) -> dict[str, Any]:
    gallery = operation.extension.gallery
    present = set(gallery_shas(gallery))
    images = _images_view(operation, present)
    adding = sum(1 for image in images if not image["already_present"])
    return {
        "operation": operation.public_id,
        "question": _question(operation.extension, adding, len(present) + adding, len(images) - adding),
        "expires_at": operation.expires_at.isoformat(),
        "images": images,
        "gallery": gallery_view(gallery),
    }


def _check_capacity(current: int, adding: int) -> None:
    capacity = settings.ARKME_GALLERY_CAPACITY
    if current + adding > capacity:
        raise Conflict(
            f"The gallery holds at most {capacity} images; it has {current} and this would add {adding}.",
            code="capacity_exceeded", details={"capacity": capacity, "current": current, "adding": adding},
        )


def gallery_prepare_add(*, account: Account, session, extension: str, arguments: dict[str, Any]) -> dict[str, Any]:
    target = extension_for_owner(account, extension)
    handles = resolve_handles(account=account, session=session, arguments=arguments)
    digest = _digest(target, handles)
    existing = PendingOperation.objects.filter(
        account=account, extension=target, status=OperationStatus.PENDING
    ).select_related("extension__gallery").first()
    if existing is not None and not _expire_if_due(existing):
        if existing.request_digest == digest and existing.session_id == session.pk:
            return operation_view(existing)
        raise Conflict("Another add to this gallery is waiting for confirmation; confirm or cancel it first.",
                       code="operation_pending")
    # One source at a time: only its fingerprints and size are kept, never its bytes.
    prepared = []
    for handle, field in handles:
        source = read_source(account=account, session=session, handle=handle, field=field)
        image = process_image(source.data, field)
        prepared.append({"handle": handle, "field": field, "source_sha256": source.sha256,
                         "content_sha256": image.sha256, "width": image.width, "height": image.height,
                         "format": image.format})
        del source, image
    present = set(gallery_shas(target.gallery))
    new = {p["content_sha256"] for p in prepared} - present
    _check_capacity(len(present), len(new))
    latest = conversation.latest_message(session.pk)
    try:
        with transaction.atomic():
            operation = PendingOperation.objects.create(
                account=account, extension=target, session=session, source_kind=arguments["source"],
                request_digest=digest, after_message=latest.pk if latest else 0,
                expires_at=timezone.now() + timedelta(seconds=settings.ARKME_PENDING_TTL_SECONDS),
                sources=prepared,
            )
    except IntegrityError:
        # A concurrent prepare won; the same one is answered with its operation.
        winner = PendingOperation.objects.filter(account=account, extension=target, status=OperationStatus.PENDING).first()
        if winner is not None and winner.request_digest == digest and winner.session_id == session.pk:
            return operation_view(winner)
        raise Conflict("Another add to this gallery is waiting for confirmation.", code="operation_pending")
    operation.extension = target
    return operation_view(operation)


def _operation_for(account: Account, session, extension: str, operation: str) -> PendingOperation:
    found = PendingOperation.objects.filter(
        public_id=str(operation), account=account, session_id=session.pk,
        extension__public_id=str(extension), extension__owner=account,
    ).select_related("extension__gallery").first()
    if found is None:
        raise NotFound("No such operation.", code="unknown_operation")
    return found


def _fail(operation: PendingOperation, error: ArkmeError) -> ArkmeError:
    _end(operation, OperationStatus.FAILED, error.code)
    return error


def gallery_confirm_add(*, account: Account, session, extension: str, operation: str) -> dict[str, Any]:
    op = _operation_for(account, session, extension, operation)
    if _expire_if_due(op) or op.status != OperationStatus.PENDING:
        raise _operation_codes(op.status)
    latest = conversation.latest_message(session.pk)
    if latest is None or latest.pk <= op.after_message or not is_confirmation(latest.text):
        # The operation stays pending: the human may still say 确认.
        raise Conflict(f"The user has not confirmed: their latest message must be {CONFIRMATION}.",
                       code="confirmation_required")
    stored = []
    for source in op.sources:
        changed = ContentRejected("A source image changed since it was prepared; prepare again.",
                                  code="source_changed", details={"fields": [source["field"]]})
        try:
            now = read_source(account=account, session=session, handle=source["handle"], field=source["field"])
        except (SourceGone, ArkmeError) as exc:
            raise _fail(op, changed) from exc
        if now.sha256 != source["source_sha256"]:
            raise _fail(op, changed)
        image = reproduce_image(now.data, source["field"], content_sha256=source["content_sha256"],
                                width=source["width"], height=source["height"])
        if image.sha256 != source["content_sha256"]:
            raise _fail(op, changed)
        # Staged as it goes, so only one image is in memory at a time.
        stored.append(blob_stage(image))
        del now, image
    blobs_store_staged(stored)  # 503 on failure: the operation stays pending, a retry stores the rest
    return _commit(op, stored)


def _commit(op: PendingOperation, images: list[StagedImage]) -> dict[str, Any]:
    with transaction.atomic():
        gallery = Gallery.objects.select_for_update().select_related("extension").filter(
            extension_id=op.extension_id, extension__owner_id=op.account_id).first()
        locked = PendingOperation.objects.select_for_update().get(pk=op.pk)
        if locked.status != OperationStatus.PENDING:
            raise _operation_codes(locked.status)
        if gallery is None:
            raise _fail(op, Conflict("The extension changed since the images were prepared.", code="target_changed"))
        present = set(gallery_shas(gallery))
        new: list[StagedImage] = []
        for image in images:
            if image.sha256 not in present:
                present.add(image.sha256)
                new.append(image)
        current = gallery.items.count()
        try:
            _check_capacity(current, len(new))
        except Conflict as error:
            # Recorded in this transaction, raised after it commits.
            _end(locked, OperationStatus.FAILED, error.code)
            failure = error
        else:
            failure = None
            blobs = {b.sha256: b for b in Blob.objects.filter(sha256__in=[i.sha256 for i in new])}
            items = GalleryItem.objects.bulk_create([
                GalleryItem(gallery=gallery, blob=blobs[image.sha256], position=current + offset)
                for offset, image in enumerate(new, start=1)
            ])
            gallery.revision += 1
            gallery.save(update_fields=["revision", "updated_at"])
            GalleryHistory.objects.create(gallery=gallery, revision=gallery.revision, action=GalleryHistory.Action.ADD,
                                          items=[item.public_id for item in items], operation=locked)
            _end(locked, OperationStatus.CONFIRMED)
    if failure is not None:
        raise failure
    return {"gallery": gallery_view(gallery), "added": len(new), "already_present": len(images) - len(new)}


def gallery_cancel_add(*, account: Account, session, extension: str, operation: str) -> dict[str, Any]:
    op = _operation_for(account, session, extension, operation)
    if _expire_if_due(op) or op.status != OperationStatus.PENDING:
        raise _operation_codes(op.status)
    _end(op, OperationStatus.CANCELLED)
    return {"gallery": gallery_view(op.extension.gallery)}


def operations_expire() -> int:
    """End every pending operation past its expiry. Returns how many."""
    return PendingOperation.objects.filter(status=OperationStatus.PENDING, expires_at__lte=timezone.now()).update(
        status=OperationStatus.EXPIRED, ended_at=timezone.now()
    )
