"""Adding images to a gallery: prepare, then the human's 确认, then confirm (or cancel).

prepare:  ownership, reconciliation, capacity, then a pending operation; nothing else written.
confirm:  the 确认 is the latest direct message, or the human's reply to this operation's own
          question (asked directly, an MCP form), which confirms this operation and no other;
          same target; every source re-read with an unchanged fingerprint; missing blobs
          stored; then one transaction that locks the gallery, reconciles and checks capacity
          again, appends, bumps the revision.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from arkme.accounts.models import AccountIdentity
from arkme.conversations import selectors as conversation
from arkme.conversations.messages import message_text_checked
from arkme.conversations.models import SessionKey
from arkme.conversations.sessions import session_is_live
from arkme.kernel.cancellation import cancellation_check
from arkme.kernel.errors import ArkmeError, Conflict, ContentRejected, DependencyUnavailable, ErrorCode, NotFound

from ..blobs.services import (
    StagedImage,
    blob_stage,
    blob_stage_ahead,
    blob_staged,
    blobs_record,
    blobs_store_staged,
    blobs_stored,
)
from ..ingest.process_image import ProcessedImage, image_facts, reproduce_image
from ..metrics import counts_refused_images
from ..models import Extension, Gallery, OperationStatus, PendingOperation
from ..selectors import CONFIRMATION, SourceArguments, extension_for_owner, gallery_shas
from .add_rows import (
    gallery_append,
    gallery_locked,
    named_operation,
    operation_create,
    operation_end,
    operation_status_locked,
    pending_add,
)
from .sources import Handle, SourceBytes, SourceGone, read_source, resolve_handles

TRAILING = "。.!！"
# The code a later confirm or cancel of an ended operation answers with.
ENDED_CODES = {
    OperationStatus.CONFIRMED: ErrorCode.OPERATION_CONFIRMED,
    OperationStatus.CANCELLED: ErrorCode.OPERATION_CANCELLED,
    OperationStatus.FAILED: ErrorCode.OPERATION_FAILED,
    OperationStatus.EXPIRED: ErrorCode.OPERATION_EXPIRED,
}


@dataclass(frozen=True)
class Confirmed:
    gallery: Gallery
    added: int
    already_present: int


def is_confirmation(text: str) -> bool:
    text = (text or "").strip()
    if text and text[-1] in TRAILING:
        text = text[:-1].rstrip()
    return text == CONFIRMATION


def _digest(extension: Extension, handles: list[tuple[Handle, str]]) -> str:
    canonical = json.dumps([extension.pk, [h for h, _ in handles]], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _ended(status: str) -> Conflict:
    return Conflict(f"This operation is {status}; prepare again.", code=ENDED_CODES[OperationStatus(status)])


def _end(operation: PendingOperation, status: str, failure: str = "") -> None:
    operation_end(operation, status, failure)


def _expire_if_due(operation: PendingOperation) -> bool:
    if operation.status == OperationStatus.PENDING and operation.expires_at <= timezone.now():
        _end(operation, OperationStatus.EXPIRED)
        return True
    return False


def _check_capacity(current: int, adding: int) -> None:
    capacity = settings.ARKME_GALLERY_CAPACITY
    if current + adding > capacity:
        raise Conflict(
            f"The gallery holds at most {capacity} images; it has {current} and this would add {adding}.",
            code=ErrorCode.CAPACITY_EXCEEDED, details={"capacity": capacity, "current": current, "adding": adding},
        )


def _named(account: AccountIdentity, session: SessionKey, extension: str, operation: str) -> QuerySet[PendingOperation]:
    """The operation a call names, if it is the account's, prepared in this session, for an
    extension the account owns."""
    return PendingOperation.objects.filter(
        public_id=str(operation), account_id=account.pk, session_id=session.pk,
        extension__public_id=str(extension), extension__owner_id=account.pk,
    )


def _pending_conflict() -> Conflict:
    return Conflict("Another add to this gallery is waiting for confirmation; confirm or cancel it first.",
                    code=ErrorCode.OPERATION_PENDING)


@counts_refused_images
def gallery_prepare_add(*, account: AccountIdentity, session: SessionKey, extension: str,
                        source: SourceArguments) -> PendingOperation:
    target = extension_for_owner(account, extension)
    handles = resolve_handles(account=account, session=session, arguments=source)
    digest = _digest(target, handles)
    existing = pending_add(account, target)
    if existing is not None and existing.session_id != session.pk and not (
            existing.session_id and session_is_live(existing.session_id)):
        # Its session ended (closed, or idle and not yet purged): it blocks nobody.
        _end(existing, OperationStatus.EXPIRED)
    elif existing is not None and not _expire_if_due(existing):
        if existing.request_digest == digest and existing.session_id == session.pk:
            return existing
        raise _pending_conflict()
    # One source at a time: only its fingerprints and size are kept, never its bytes.
    prepared: list[dict[str, Any]] = []
    for handle, field in handles:
        read = read_source(account=account, session=session, handle=handle, field=field)
        image = image_facts(read.data, field, account=account.pk)
        prepared.append({"handle": handle, "field": field, "source_sha256": read.sha256,
                         "content_sha256": image.sha256, "width": image.width, "height": image.height,
                         "format": image.format,
                         # An SVG's render is staged now, so that confirm stores it instead of rendering again.
                         "staged": isinstance(image, ProcessedImage) and blob_stage_ahead(image)})
        del read, image
    present = set(gallery_shas(target.gallery))
    new = {p["content_sha256"] for p in prepared} - present
    _check_capacity(len(present), len(new))
    latest = conversation.latest_message(session.pk)
    # The insert is one statement, a transaction of its own; only inside a caller's transaction
    # does it need a savepoint, so that a refused insert leaves that transaction usable.
    guard = transaction.atomic() if transaction.get_connection().in_atomic_block else contextlib.nullcontext()
    try:
        with guard:
            operation = operation_create(
                account=account, target=target, session=session, source_kind=source["source"], digest=digest,
                after_message=latest.pk if latest else 0, sources=prepared)
    except IntegrityError:
        # A concurrent prepare won; the same one is answered with its operation.
        winner = pending_add(account, target)
        if winner is not None and winner.request_digest == digest and winner.session_id == session.pk:
            return winner
        raise _pending_conflict() from None
    return operation


def _operation_for(account: AccountIdentity, session: SessionKey, extension: str, operation: str) -> PendingOperation:
    found = named_operation(account, session, extension, operation)
    if found is None:
        raise NotFound("No such operation.", code=ErrorCode.UNKNOWN_OPERATION)
    return found


def _fail(operation: PendingOperation, error: ArkmeError) -> ArkmeError:
    _end(operation, OperationStatus.FAILED, error.code)
    return error


def _confirmed_by_human(op: PendingOperation, session: SessionKey) -> bool:
    """The human confirmed this operation: they replied 确认 to its own question, or their
    latest direct message, recorded after the prepare, is 确认."""
    if op.replied_at is not None and is_confirmation(op.reply):
        return True
    latest = conversation.latest_message(session.pk)
    return latest is not None and latest.pk > op.after_message and is_confirmation(latest.text)


def gallery_add_record_reply(*, account: AccountIdentity, session: SessionKey, extension: str, operation: str,
                             text: str) -> None:
    """Record the human's reply to this operation's question, asked them directly. It answers
    that question only: it confirms this operation when it is 确认, and no other, unlike a
    message in the conversation (the human never saw another operation's question). The text
    is held to a message's rules. An operation that is not pending keeps nothing: confirm says
    why."""
    text = message_text_checked(text, field="reply")
    _named(account, session, extension, operation).filter(status=OperationStatus.PENDING).update(
        reply=text, replied_at=timezone.now())


def gallery_add_awaiting_confirmation(*, account: AccountIdentity, session: SessionKey, extension: str,
                                      operation: str) -> PendingOperation | None:
    """The pending add still waiting for the human's 确认, or None (unknown, ended, expired, or
    already confirmed in the conversation). Reads only: confirm itself decides and says why."""
    op = named_operation(account, session, extension, operation)
    if op is None or op.status != OperationStatus.PENDING or op.expires_at <= timezone.now():
        return None
    if _confirmed_by_human(op, session):
        return None
    return op


@counts_refused_images
def gallery_confirm_add(*, account: AccountIdentity, session: SessionKey, extension: str,
                        operation: str) -> Confirmed:
    op = _operation_for(account, session, extension, operation)
    if _expire_if_due(op) or op.status != OperationStatus.PENDING:
        raise _ended(op.status)
    if not _confirmed_by_human(op, session):
        # The operation stays pending: the human may still say 确认.
        raise Conflict(f"The user has not confirmed: their latest message must be {CONFIRMATION}.",
                       code=ErrorCode.CONFIRMATION_REQUIRED)
    # Which of its images are stored already, asked once for the add rather than per image.
    present = blobs_stored([source["content_sha256"] for source in op.sources])
    stored = []
    for source in op.sources:
        changed = ContentRejected("A source image changed since it was prepared; prepare again.",
                                  code=ErrorCode.SOURCE_CHANGED, details={"fields": [source["field"]]})
        try:
            now = read_source(account=account, session=session, handle=source["handle"], field=source["field"])
        except DependencyUnavailable:
            raise  # an outage says nothing about the source: the operation stays pending for a retry
        except (SourceGone, ArkmeError) as exc:
            raise _fail(op, changed) from exc
        if now.sha256 != source["source_sha256"]:
            raise _fail(op, changed)
        staged = _staged_again(now, source, account, present)
        if staged is None:
            raise _fail(op, changed)
        stored.append(staged)
        del now
    blobs_store_staged(stored)  # 503 on failure: the operation stays pending, a retry stores the rest
    return _commit(op, stored)


def _staged_again(now: SourceBytes, source: dict[str, Any], account: AccountIdentity,
                  present: dict[str, int]) -> StagedImage | None:
    """The image prepare made from these unchanged bytes, staged: the render prepare staged,
    found by its content address, or else the image derived again and checked against it
    (None when it differs). Staged as it goes, so only one image is in memory at a time.
    ``present``: the sizes of the add's images already stored, by fingerprint."""
    sha256, width, height = source["content_sha256"], source["width"], source["height"]
    if source.get("staged"):
        staged = blob_staged(sha256, width, height, source["format"], stored_size=present.get(sha256))
        if staged is not None:
            return staged
    image = reproduce_image(now.data, source["field"], content_sha256=sha256, width=width, height=height,
                            account=account.pk)
    if image.sha256 != sha256:
        return None
    return blob_stage(image, stored=sha256 in present)


def _commit(op: PendingOperation, images: list[StagedImage]) -> Confirmed:
    with transaction.atomic(durable=True):
        gallery = gallery_locked(op.extension_id, op.account_id)
        status = operation_status_locked(op)
        if status != OperationStatus.PENDING:
            raise _ended(status)
        try:
            if gallery is None:
                raise Conflict("The extension changed since the images were prepared.", code=ErrorCode.TARGET_CHANGED)
            shas = gallery_shas(gallery)
            present = set(shas)
            new: list[StagedImage] = []
            for image in images:
                if image.sha256 not in present:
                    present.add(image.sha256)
                    new.append(image)
            current = len(shas)  # a row per item
            _check_capacity(current, len(new))
        except Conflict as error:
            # The failure is recorded in this transaction and raised once it has committed.
            _end(op, OperationStatus.FAILED, error.code)
            failure: Conflict | None = error
        else:
            failure = None
            # The rows of the images this add stores commit with it: one commit per confirm.
            blobs = blobs_record(new)
            gallery_append(gallery, [blobs[image.sha256] for image in new], current, op)
            _end(op, OperationStatus.CONFIRMED)
        # The last step before the commit: a caller that went away (while the blobs were being
        # stored, say) gets nothing added, and the operation stays pending for a retry.
        cancellation_check()
    if failure is not None or gallery is None:
        raise failure or Conflict(code=ErrorCode.TARGET_CHANGED)
    return Confirmed(gallery=gallery, added=len(new), already_present=len(images) - len(new))


def gallery_cancel_add(*, account: AccountIdentity, session: SessionKey, extension: str, operation: str) -> Gallery:
    op = _operation_for(account, session, extension, operation)
    if _expire_if_due(op) or op.status != OperationStatus.PENDING:
        raise _ended(op.status)
    _end(op, OperationStatus.CANCELLED)
    return op.extension.gallery


def operations_end_for_sessions(session_ids: Iterable[int]) -> int:
    """A session that ends takes its pending adds with it, so none blocks the gallery."""
    return PendingOperation.objects.filter(status=OperationStatus.PENDING, session_id__in=list(session_ids)).update(
        status=OperationStatus.EXPIRED, ended_at=timezone.now())


def operations_expire(operations: Iterable[PendingOperation] | None = None) -> int:
    """End pending operations past their expiry, or the given ones at once (staff). Returns how many."""
    pending = PendingOperation.objects.filter(status=OperationStatus.PENDING)
    if operations is None:
        pending = pending.filter(expires_at__lte=timezone.now())
    else:
        pending = pending.filter(pk__in=[operation.pk for operation in operations])
    return pending.update(status=OperationStatus.EXPIRED, ended_at=timezone.now())
