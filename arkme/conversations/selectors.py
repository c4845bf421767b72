"""Reads of the recorded conversation that other domains need (the latest message, its files)."""
from __future__ import annotations

from django.db.models import QuerySet

from .attachments import attachment_store
from .models import CapturedAttachment, Message


def latest_message(session_pk: int) -> Message | None:
    return Message.objects.filter(session_id=session_pk).order_by("-id").first()


def attachments_of(message: Message) -> QuerySet[CapturedAttachment]:
    return CapturedAttachment.objects.filter(message=message).order_by("index")


def attachment_in_session(session_pk: int, attachment_pk: int) -> CapturedAttachment | None:
    return CapturedAttachment.objects.filter(pk=attachment_pk, message__session_id=session_pk).first()


def read_attachment(attachment: CapturedAttachment, limit: int) -> bytes:
    """At most ``limit + 1`` bytes, so an oversized file is noticed without reading it all."""
    return attachment_store().read_at_most(attachment.storage_key, limit + 1)
