"""``Idempotency-Key``: the first call with a key does the work, a repeat replays its response.

A key is claimed by inserting its row (a unique constraint decides races); a repeat that
finds the row in progress waits for it; a call that failed on a dependency (5xx) lets the
key go so that a retry may do the work.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from arkme.conversations.models import AgentSession, DshClient
from arkme.kernel.errors import Conflict, ErrorCode
from arkme.kernel.sql import column, default_db, hot_cursor, loaded, table

from .models import IdempotencyRecord, IdempotencyStatus

WAIT_SECONDS = 10.0
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class CallResult:
    status: int
    body: dict[str, Any]


_CLAIM_FIELDS = ("client", "session", "key", "tool_name", "request_digest", "status", "created_at")


@functools.cache
def _claim_sql(vendor: str) -> str:
    """The claim's INSERT, written once per database vendor: every keyed call runs it."""
    names = ", ".join(column(IdempotencyRecord, name) for name in _CLAIM_FIELDS)
    marks = ", ".join(["%s"] * len(_CLAIM_FIELDS))
    returning = f" RETURNING {column(IdempotencyRecord, 'id')}" if connection.features.can_return_columns_from_insert else ""
    return f"INSERT INTO {table(IdempotencyRecord)} ({names}) VALUES ({marks}){returning}"  # noqa: S608


@functools.cache
def _complete_sql(vendor: str) -> str:
    sets = ", ".join(f"{column(IdempotencyRecord, name)} = %s" for name in ("status", "response_status", "response_body"))
    return f"UPDATE {table(IdempotencyRecord)} SET {sets} WHERE {column(IdempotencyRecord, 'id')} = %s"  # noqa: S608


def _insert_claim(client: DshClient, session: AgentSession, key: str, tool_name: str, digest: str) -> int:
    db = default_db()
    values: list[Any] = [client.pk, session.pk, key, tool_name, digest, IdempotencyStatus.IN_PROGRESS.value,
                         db.ops.adapt_datetimefield_value(timezone.now())]
    with hot_cursor() as cursor:
        cursor.execute(_claim_sql(db.vendor), values)
        if db.features.can_return_columns_from_insert:
            return int(cursor.fetchone()[0])
        return int(cursor.lastrowid)


# What a claim's record holds: the call reads nothing else of it before completing it.
_RECORD_FIELDS = ("id", "client_id", "session_id", "key", "tool_name", "request_digest", "status")


def idempotency_claim(*, client: DshClient, session: AgentSession, key: str, tool_name: str,
                      digest: str) -> tuple[IdempotencyRecord | None, CallResult | None]:
    """Claim the key for this call, or return the first call's response to replay."""
    db = default_db()
    try:
        if db.in_atomic_block:
            # A savepoint, so that a lost race does not spoil the caller's transaction.
            with transaction.atomic():
                pk = _insert_claim(client, session, key, tool_name, digest)
        else:
            # Outside a transaction the INSERT is its own: no BEGIN and COMMIT around it.
            pk = _insert_claim(client, session, key, tool_name, digest)
        # The row as it was written (the rest deferred), not a new instance: the model's
        # __init__ with keywords walks every field and its default, on every keyed call.
        return loaded(IdempotencyRecord, db.alias, _RECORD_FIELDS, (
            pk, client.pk, session.pk, key, tool_name, digest, IdempotencyStatus.IN_PROGRESS)), None
    except IntegrityError as lost:
        # The key is taken: a repeat. Django raised the error from a frame that the error's
        # traceback names; dropping the traceback breaks that cycle, so the call's objects go
        # when it ends instead of waiting for the garbage collector (see DshApiView).
        lost.__traceback__ = None
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        existing = IdempotencyRecord.objects.filter(client=client, session=session, key=key).first()
        if existing is None:
            # The first call failed and let the key go: this one may do the work.
            return idempotency_claim(client=client, session=session, key=key, tool_name=tool_name, digest=digest)
        if existing.request_digest != digest:
            raise Conflict("This Idempotency-Key was used with other arguments.",
                           code=ErrorCode.IDEMPOTENCY_KEY_REUSED)
        if existing.status == IdempotencyStatus.COMPLETE:
            return None, CallResult(existing.response_status or 200, existing.response_body or {})
        if time.monotonic() > deadline:
            raise Conflict("A call with this Idempotency-Key is still running.",
                           code=ErrorCode.IDEMPOTENCY_IN_PROGRESS)
        time.sleep(POLL_SECONDS)


_RESPONSE_BODY_ENCODER = IdempotencyRecord._meta.get_field("response_body").encoder


def idempotency_complete(record: IdempotencyRecord, result: CallResult) -> None:
    """Keep the response for repeats; a dependency failure lets the key go instead."""
    if result.status >= 500:
        idempotency_release(record)
        return
    record.status = IdempotencyStatus.COMPLETE
    record.response_status, record.response_body = result.status, result.body
    db = default_db()
    body = db.ops.adapt_json_value(result.body, _RESPONSE_BODY_ENCODER)
    with hot_cursor() as cursor:
        cursor.execute(_complete_sql(db.vendor), [record.status.value, result.status, body, record.pk])


def idempotency_release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(pk=record.pk).delete()


def idempotency_purge(*, batch_size: int = 1000) -> int:
    """Forget keys older than ``ARKME_IDEMPOTENCY_TTL_SECONDS``, a batch per statement. Returns how many."""
    cutoff = timezone.now() - timedelta(seconds=settings.ARKME_IDEMPOTENCY_TTL_SECONDS)
    expired = IdempotencyRecord.objects.filter(created_at__lt=cutoff)
    deleted = 0
    while batch := list(expired.order_by("pk").values_list("pk", flat=True)[:batch_size]):
        deleted += IdempotencyRecord.objects.filter(pk__in=batch).delete()[0]
    return deleted
