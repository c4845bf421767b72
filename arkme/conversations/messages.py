"""Recording the signed-in human's latest direct message and its attachments."""
from __future__ import annotations

import secrets
from typing import Sequence

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from arkme.kernel.errors import Conflict, ErrorCode, InvalidRequest, StorageUnavailable

from .attachments import attachment_key, attachment_store, delete_attachments, sha256_of
from .models import AgentSession, CapturedAttachment, Message

MESSAGE_TEXT_MAX = 20_000


def message_text_checked(text: str, *, field: str = "text") -> str:
    """A text the human wrote, as it may be stored: at most ``MESSAGE_TEXT_MAX`` characters,
    no NUL (PostgreSQL's text cannot hold one) and no lone surrogate (not encodable as UTF-8),
    the rules of the REST message serializer; otherwise its ``400 invalid_request``. Every
    door that records what the human said checks it here."""
    if len(text) > MESSAGE_TEXT_MAX or "\x00" in text or not _encodable(text):
        raise InvalidRequest(f"Invalid request: {field}.", details={"fields": [field]})
    return text


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _duplicate() -> Conflict:
    return Conflict("A message with this id was already recorded.", code=ErrorCode.DUPLICATE_MESSAGE)


def message_record(*, session: AgentSession, message_id: str, text: str,
                   attachments: Sequence[UploadedFile] = ()) -> Message:
    """Upload the attachments first, then record the message and its rows in one short
    transaction (no connection waits idle in a transaction during an upload); a failure on
    either side removes what was uploaded and leaves nothing."""
    message_text_checked(text)
    if len(attachments) > settings.ARKME_MESSAGE_MAX_ATTACHMENTS:
        raise InvalidRequest(f"A message may have at most {settings.ARKME_MESSAGE_MAX_ATTACHMENTS} attachments.",
                             code=ErrorCode.TOO_MANY_ATTACHMENTS,
                             details={"fields": ["attachments"]})
    if Message.objects.filter(session=session, message_id=message_id).exists():
        raise _duplicate()
    store = attachment_store()
    batch = secrets.token_hex(8)  # the message has no primary key yet; keys must not collide
    stored: list[str] = []
    rows: list[CapturedAttachment] = []
    try:
        for index, upload in enumerate(attachments, start=1):
            key = attachment_key(session.public_id, batch, index)
            digest, size = sha256_of(upload)
            if not store.put_if_absent(key, upload):
                raise StorageUnavailable()  # a random key is never taken: the store misbehaves
            stored.append(key)
            rows.append(CapturedAttachment(index=index, storage_key=key, sha256=digest, size=size,
                                           content_type=(upload.content_type or "")[:100]))
        with transaction.atomic(durable=True):
            message = Message.objects.create(session=session, message_id=message_id, text=text)
            for row in rows:
                row.message = message
            CapturedAttachment.objects.bulk_create(rows)
    except IntegrityError as exc:
        delete_attachments(stored)
        raise _duplicate() from exc
    except BaseException:
        delete_attachments(stored)
        raise
    return message
