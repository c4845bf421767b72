"""Recording the signed-in human's latest direct message and its attachments."""
from __future__ import annotations

from typing import Sequence

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from arkme.kernel.errors import Conflict, ErrorCode, InvalidRequest, StorageUnavailable

from .attachments import attachment_key, attachment_store, delete_attachments, sha256_of
from .models import AgentSession, CapturedAttachment, Message


def _duplicate() -> Conflict:
    return Conflict("A message with this id was already recorded.", code=ErrorCode.DUPLICATE_MESSAGE)


def message_record(*, session: AgentSession, message_id: str, text: str,
                   attachments: Sequence[UploadedFile] = ()) -> Message:
    """Store the attachments first, then the rows; a failure on either side leaves nothing."""
    if len(attachments) > settings.ARKME_MESSAGE_MAX_ATTACHMENTS:
        raise InvalidRequest("Too many attachments.", code=ErrorCode.TOO_MANY_ATTACHMENTS,
                             details={"fields": ["attachments"]})
    if Message.objects.filter(session=session, message_id=message_id).exists():
        raise _duplicate()
    store = attachment_store()
    stored: list[str] = []
    try:
        with transaction.atomic(durable=True):
            message = Message.objects.create(session=session, message_id=message_id, text=text)
            rows = []
            for index, upload in enumerate(attachments, start=1):
                key = attachment_key(session.public_id, message.pk, index)
                digest, size = sha256_of(upload)
                if not store.put_if_absent(key, upload):
                    # The key is unique per message and index: something stale sits there.
                    raise StorageUnavailable()
                stored.append(key)
                rows.append(CapturedAttachment(
                    message=message, index=index, storage_key=key, sha256=digest, size=size,
                    content_type=(upload.content_type or "")[:100],
                ))
            CapturedAttachment.objects.bulk_create(rows)
    except IntegrityError as exc:
        delete_attachments(stored)
        raise _duplicate() from exc
    except BaseException:
        delete_attachments(stored)
        raise
    return message
