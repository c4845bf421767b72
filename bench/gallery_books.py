# ruff: noqa: S608 - table names come from the models, every value is a bound parameter
"""The database work a gallery add must do under the contract, in plain SQL: the floor's books.

``bench/gallery_floors.py`` is an add's image work; this is the rest of what the contract and
the design require of it, with Django's cursor and nothing between, so that on small images
(where the bookkeeping outweighs the image) the floor still does the product's required
work. Per add:

- prepare: the extension, owned by the caller, and its gallery; no other add pending on it;
  the gallery's stored fingerprints (reconciliation); the session's latest message (the
  confirmation must come after it); the pending operation, written;
- confirm: the operation, pending; the session's latest message, ``确认`` and after the
  prepare; then one transaction: the gallery locked, the operation still pending, the blob
  rows recorded, the gallery's items (reconciliation and capacity again), the new items, the
  revision bumped, the operation ended.

What the product does besides (its history rows, its audit, the store task's hop) is not
required by the contract and is left out. ``tests/bench`` checks that the floor leaves the
gallery, its items and the blob rows as the product does.
"""
from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from arkme.conversations.models import Message
from arkme.kernel.sql import table as _t
from galleries.models import Blob, Extension, Gallery, GalleryItem, PendingOperation
from galleries.services.gallery_add import is_confirmation  # the contract's rule for 确认, shared


def _now() -> Any:
    return connection.ops.adapt_datetimefield_value(timezone.now())


class Books:
    """One account's adds to one extension in one session."""

    def __init__(self, account_pk: int, session_pk: int, extension_public_id: str) -> None:
        self.account, self.session, self.extension = account_pk, session_pk, extension_public_id

    def prepare(self, prepared: list[tuple[str, str]], sizes: list[tuple[int, int, str]]) -> int:
        """``prepared``: (source sha256, stored sha256) per image; ``sizes``: (width, height,
        format). The pending operation's id."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT e.id, g.id FROM {_t(Extension)} e JOIN {_t(Gallery)} g ON g.extension_id = e.id"
                           " WHERE e.public_id = %s AND e.owner_id = %s", [self.extension, self.account])
            extension_id, gallery_id = cursor.fetchone()
            cursor.execute(f"SELECT 1 FROM {_t(PendingOperation)} WHERE account_id = %s AND extension_id = %s"
                           " AND status = 'pending'", [self.account, extension_id])
            if cursor.fetchone() is not None:
                raise ValueError("an add is pending")
            cursor.execute(f"SELECT b.sha256 FROM {_t(GalleryItem)} i JOIN {_t(Blob)} b ON b.id = i.blob_id"
                           " WHERE i.gallery_id = %s", [gallery_id])
            present = {sha for (sha,) in cursor.fetchall()}
            if len(present | {stored for _, stored in prepared}) > settings.ARKME_GALLERY_CAPACITY:
                raise ValueError("over capacity")
            cursor.execute(f"SELECT MAX(id) FROM {_t(Message)} WHERE session_id = %s", [self.session])
            latest = cursor.fetchone()[0] or 0
            sources = [{"source_sha256": source, "content_sha256": stored, "width": w, "height": h, "format": f}
                       for (source, stored), (w, h, f) in zip(prepared, sizes, strict=True)]
            now = timezone.now()
            cursor.execute(
                f"INSERT INTO {_t(PendingOperation)} (public_id, account_id, extension_id, session_id, status,"
                " source_kind, request_digest, sources, after_message, reply, failure_code, created_at, expires_at)"
                " VALUES (%s, %s, %s, %s, 'pending', 'workspace', %s, %s, %s, '', '', %s, %s) RETURNING id",
                [f"op_{secrets.token_hex(10)}", self.account, extension_id, self.session, "0" * 64,
                 json.dumps(sources), latest, connection.ops.adapt_datetimefield_value(now),
                 connection.ops.adapt_datetimefield_value(now + timedelta(minutes=15))])
            return int(cursor.fetchone()[0])

    def confirm(self, operation: int, stored: list[tuple[str, int, int, int, str]]) -> None:
        """``stored``: (sha256, size, width, height, format) of each image, in order."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT status, after_message, extension_id FROM {_t(PendingOperation)}"
                           " WHERE id = %s AND account_id = %s AND session_id = %s",
                           [operation, self.account, self.session])
            status, after, extension_id = cursor.fetchone()
            cursor.execute(f"SELECT id, text FROM {_t(Message)} WHERE session_id = %s ORDER BY id DESC LIMIT 1",
                           [self.session])
            latest = cursor.fetchone()
            if status != "pending" or latest is None or latest[0] <= after or not is_confirmation(latest[1]):
                raise ValueError("not confirmed")
        with transaction.atomic(durable=True), connection.cursor() as cursor:
            lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
            cursor.execute(f"SELECT id FROM {_t(Gallery)} WHERE extension_id = %s{lock}", [extension_id])
            (gallery_id,) = cursor.fetchone()
            cursor.execute(f"SELECT status FROM {_t(PendingOperation)} WHERE id = %s{lock}", [operation])
            if cursor.fetchone()[0] != "pending":
                raise ValueError("ended")
            cursor.execute(f"SELECT i.position, b.sha256 FROM {_t(GalleryItem)} i JOIN {_t(Blob)} b"
                           " ON b.id = i.blob_id WHERE i.gallery_id = %s", [gallery_id])
            items = cursor.fetchall()
            present = {sha for _, sha in items}
            new = [image for image in dict((image[0], image) for image in stored).values() if image[0] not in present]
            if len(items) + len(new) > settings.ARKME_GALLERY_CAPACITY:
                raise ValueError("over capacity")
            now = _now()
            if new:
                blanks = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(new))
                cursor.execute(f"INSERT INTO {_t(Blob)} (sha256, size, width, height, format, created_at)"
                               f" VALUES {blanks} ON CONFLICT (sha256) DO NOTHING",
                               [value for image in new for value in (*image, now)])
                marks = ", ".join(["%s"] * len(new))
                cursor.execute(f"SELECT sha256, id FROM {_t(Blob)} WHERE sha256 IN ({marks})", [i[0] for i in new])
                ids = dict(cursor.fetchall())
                rows = ", ".join(["(%s, %s, %s, %s, %s)"] * len(new))
                cursor.execute(f"INSERT INTO {_t(GalleryItem)} (public_id, gallery_id, blob_id, position, created_at)"
                               f" VALUES {rows}",
                               [value for position, image in enumerate(new, start=len(items) + 1)
                                for value in (f"img_{secrets.token_hex(10)}", gallery_id, ids[image[0]], position,
                                              now)])
            cursor.execute(f"UPDATE {_t(Gallery)} SET revision = revision + 1, updated_at = %s WHERE id = %s",
                           [now, gallery_id])
            cursor.execute(f"UPDATE {_t(PendingOperation)} SET status = 'confirmed', ended_at = %s WHERE id = %s",
                           [now, operation])
