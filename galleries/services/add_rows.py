# ruff: noqa: S608 - identifiers come from the models' metadata; every value is a bound parameter
"""The rows of a gallery add, read and written with SQL written by hand.

Every add runs these statements, and on small images an add is mostly its books: composing
them with the ORM cost several times what running them does (docs/ARCHITECTURE.md, "SQL
written by hand"). Each is built once per database vendor from the models' names, with every
value a bound parameter, and fills each row as the ORM would (defaults, ``auto_now``).
"""
from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any, Sequence

from django.conf import settings
from django.utils import timezone

from arkme.accounts.models import AccountIdentity
from arkme.conversations.models import SessionKey
from arkme.kernel.ids import new_item_id, new_operation_id
from arkme.kernel.sql import column, columns, default_db, field_of, from_row, hot_cursor, loaded, table

from ..models import Extension, Gallery, GalleryHistory, GalleryItem, OperationStatus, PendingOperation
from ..selectors import EXTENSION_FIELDS, GALLERY_FIELDS, extension_with_gallery

OPERATION_FIELDS = tuple(f.attname for f in PendingOperation._meta.concrete_fields)
_CREATED_FIELDS = tuple(name for name in OPERATION_FIELDS if name != "id")
_OPERATION_EXTENSION = PendingOperation._meta.get_field("extension")
_SOURCES = field_of(PendingOperation, "sources")
_HISTORY_ITEMS = field_of(GalleryHistory, "items")
_ITEM_COLUMNS = ("public_id", "gallery", "blob", "position", "created_at")
_HISTORY_COLUMNS = ("gallery", "revision", "action", "items", "operation", "created_at")


def _col(name: str) -> str:
    return column(PendingOperation, name)


@functools.cache
def _statements(vendor: str, lock: str) -> dict[str, str]:
    """``lock`` ends the reads that lock their rows: ``FOR UPDATE`` where the database locks rows."""
    o, e, g = table(PendingOperation), table(Extension), table(Gallery)
    i, h = table(GalleryItem), table(GalleryHistory)
    operation_with_extension = (
        f"SELECT {columns(PendingOperation, 'o', OPERATION_FIELDS)}, {columns(Extension, 'e', EXTENSION_FIELDS)},"
        f" {columns(Gallery, 'g', GALLERY_FIELDS)}"
        f" FROM {o} o JOIN {e} e ON e.{column(Extension, 'id')} = o.{_col('extension')}"
        f" LEFT JOIN {g} g ON g.{column(Gallery, 'extension')} = e.{column(Extension, 'id')}")
    return {
        "pending": (f"SELECT {columns(PendingOperation, 'o', OPERATION_FIELDS)} FROM {o} o"
                    f" WHERE o.{_col('account')} = %s AND o.{_col('extension')} = %s AND o.{_col('status')} = %s"
                    f" ORDER BY o.{_col('id')} DESC"),
        "named": (f"{operation_with_extension} WHERE o.{_col('public_id')} = %s AND o.{_col('account')} = %s"
                  f" AND o.{_col('session')} = %s AND e.{column(Extension, 'public_id')} = %s"
                  f" AND e.{column(Extension, 'owner')} = %s"),
        "create": (f"INSERT INTO {o} ({', '.join(_col(name) for name in _CREATED_FIELDS)})"
                   f" VALUES ({', '.join(['%s'] * len(_CREATED_FIELDS))}) RETURNING {_col('id')}"),
        "end": (f"UPDATE {o} SET {_col('status')} = %s, {_col('failure_code')} = %s, {_col('ended_at')} = %s"
                f" WHERE {_col('id')} = %s AND {_col('status')} = %s"),
        # The gallery and its extension, both locked, as select_related with select_for_update.
        "gallery": (f"SELECT {columns(Extension, 'e', EXTENSION_FIELDS)}, {columns(Gallery, 'g', GALLERY_FIELDS)}"
                    f" FROM {g} g JOIN {e} e ON e.{column(Extension, 'id')} = g.{column(Gallery, 'extension')}"
                    f" WHERE g.{column(Gallery, 'extension')} = %s AND e.{column(Extension, 'owner')} = %s{lock}"),
        "status": f"SELECT {_col('status')} FROM {o} WHERE {_col('id')} = %s{lock}",
        "items": f"INSERT INTO {i} ({', '.join(column(GalleryItem, n) for n in _ITEM_COLUMNS)}) VALUES ",
        "revision": (f"UPDATE {g} SET {column(Gallery, 'revision')} = %s, {column(Gallery, 'updated_at')} = %s"
                     f" WHERE {column(Gallery, 'id')} = %s"),
        "history": (f"INSERT INTO {h} ({', '.join(column(GalleryHistory, n) for n in _HISTORY_COLUMNS)})"
                    f" VALUES ({', '.join(['%s'] * len(_HISTORY_COLUMNS))})"),
    }


def _sql(name: str) -> str:
    db = default_db()
    return _statements(db.vendor, " FOR UPDATE" if db.features.has_select_for_update else "")[name]


def _at(value: datetime) -> Any:
    return default_db().ops.adapt_datetimefield_value(value)


def pending_add(account: AccountIdentity, target: Extension) -> PendingOperation | None:
    """The account's pending add to this extension: one at most (a unique constraint), with
    the extension (and its gallery) the caller holds attached."""
    db = default_db()
    with hot_cursor() as cursor:
        cursor.execute(_sql("pending"), [account.pk, target.pk, OperationStatus.PENDING.value])
        row = cursor.fetchone()
    if row is None:
        return None
    operation = from_row(PendingOperation, OPERATION_FIELDS, row, db)
    _OPERATION_EXTENSION.set_cached_value(operation, target)
    return operation


def named_operation(account: AccountIdentity, session: SessionKey, extension: str,
                    operation: str) -> PendingOperation | None:
    """The operation a call names, if it is the account's, prepared in this session, for an
    extension the account owns: with that extension and its gallery, in one statement."""
    db = default_db()
    with hot_cursor() as cursor:
        cursor.execute(_sql("named"), [str(operation), account.pk, session.pk, str(extension), account.pk])
        row = cursor.fetchone()
    if row is None:
        return None
    found = from_row(PendingOperation, OPERATION_FIELDS, row[:len(OPERATION_FIELDS)], db)
    _OPERATION_EXTENSION.set_cached_value(found, extension_with_gallery(row[len(OPERATION_FIELDS):], db))
    return found


def operation_create(*, account: AccountIdentity, target: Extension, session: SessionKey, source_kind: str,
                     digest: str, after_message: int, sources: list[dict[str, Any]]) -> PendingOperation:
    """The pending operation, written with every column as ``objects.create`` fills it. A
    concurrent prepare's row raises ``IntegrityError`` (the one-pending-add constraint)."""
    db = default_db()
    now = timezone.now()
    values: dict[str, Any] = {
        "public_id": new_operation_id(), "account_id": account.pk, "extension_id": target.pk,
        "session_id": session.pk, "status": OperationStatus.PENDING.value, "source_kind": source_kind,
        "request_digest": digest, "sources": sources, "after_message": after_message, "reply": "",
        "replied_at": None, "failure_code": "", "created_at": now,
        "expires_at": now + timedelta(seconds=settings.ARKME_PENDING_TTL_SECONDS), "ended_at": None,
    }
    adapted = {"sources": _SOURCES.get_db_prep_save(sources, db), "created_at": _at(now),
               "expires_at": _at(values["expires_at"])}
    with hot_cursor() as cursor:
        cursor.execute(_sql("create"), [adapted.get(name, values[name]) for name in _CREATED_FIELDS])
        (pk,) = cursor.fetchone()
    values["id"] = pk
    operation = loaded(PendingOperation, db.alias, OPERATION_FIELDS, [values[name] for name in OPERATION_FIELDS])
    _OPERATION_EXTENSION.set_cached_value(operation, target)
    return operation


def operation_end(operation: PendingOperation, status: str, failure: str = "") -> None:
    """End the operation with ``status`` if it is still pending."""
    with hot_cursor() as cursor:
        cursor.execute(_sql("end"), [status, failure, _at(timezone.now()), operation.pk, OperationStatus.PENDING.value])
    operation.status = status


def gallery_locked(extension_id: int, account_id: int) -> Gallery | None:
    """Inside the caller's transaction: the extension's gallery, if the account still owns the
    extension, with the extension attached; both rows locked where the database locks rows."""
    db = default_db()
    with hot_cursor() as cursor:
        cursor.execute(_sql("gallery"), [extension_id, account_id])
        row = cursor.fetchone()
    return None if row is None else extension_with_gallery(row, db).gallery


def operation_status_locked(operation: PendingOperation) -> str:
    """Inside the caller's transaction: the operation's status now, its row locked."""
    with hot_cursor() as cursor:
        cursor.execute(_sql("status"), [operation.pk])
        row = cursor.fetchone()
    if row is None:
        raise PendingOperation.DoesNotExist("PendingOperation matching query does not exist.")
    return str(row[0])


def gallery_append(gallery: Gallery, blob_ids: Sequence[int], after: int, operation: PendingOperation) -> None:
    """Inside the caller's transaction: the blobs appended as items after position ``after``,
    the revision bumped and the change's history row, naming the new items."""
    now = timezone.now()
    at = _at(now)
    items = [new_item_id() for _ in blob_ids]
    with hot_cursor() as cursor:
        if items:
            cursor.execute(_sql("items") + ", ".join(["(%s, %s, %s, %s, %s)"] * len(items)), [
                value for position, (item, blob) in enumerate(zip(items, blob_ids, strict=True), start=after + 1)
                for value in (item, gallery.pk, blob, position, at)])
        gallery.revision += 1
        gallery.updated_at = now
        cursor.execute(_sql("revision"), [gallery.revision, at, gallery.pk])
        cursor.execute(_sql("history"), [gallery.pk, gallery.revision, GalleryHistory.Action.ADD.value,
                                         _HISTORY_ITEMS.get_db_prep_save(items, default_db()), operation.pk, at])
