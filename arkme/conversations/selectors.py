"""Reads of the recorded conversation that other domains need (the latest message, its files)."""
from __future__ import annotations

import functools

from django.db.models import QuerySet

from arkme.kernel.sql import column, columns, default_db, from_row, hot_cursor, table

from .attachments import attachment_store
from .models import CapturedAttachment, Message

MESSAGE_FIELDS = ("id", "session_id", "message_id", "text", "recorded_at")


@functools.cache
def _latest_message_sql(vendor: str) -> str:
    return (f"SELECT {columns(Message, 'm', MESSAGE_FIELDS)} FROM {table(Message)} m"  # noqa: S608
            f" WHERE m.{column(Message, 'session')} = %s ORDER BY m.{column(Message, 'id')} DESC LIMIT 1")


def latest_message(session_pk: int) -> Message | None:
    """The session's latest message: a gallery add reads it at prepare and again at confirm,
    so the statement is written by hand (docs/ARCHITECTURE.md)."""
    db = default_db()
    with hot_cursor() as cursor:
        cursor.execute(_latest_message_sql(db.vendor), [session_pk])
        row = cursor.fetchone()
    return None if row is None else from_row(Message, MESSAGE_FIELDS, row, db)


def attachments_of(message: Message) -> QuerySet[CapturedAttachment]:
    return CapturedAttachment.objects.filter(message=message).order_by("index")


def attachment_in_session(session_pk: int, attachment_pk: int) -> CapturedAttachment | None:
    return CapturedAttachment.objects.filter(pk=attachment_pk, message__session_id=session_pk).first()


def read_attachment(attachment: CapturedAttachment, limit: int) -> bytes:
    """At most ``limit + 1`` bytes, so an oversized file is noticed without reading it all."""
    return attachment_store().read_at_most(attachment.storage_key, limit + 1)
