"""``Idempotency-Key``: the first call with a key does the work, a repeat replays its response.

A key is claimed by inserting its row (a unique constraint decides races); a repeat that
finds the row in progress waits for it, within what its own request budget allows; a call that
failed on a dependency (5xx) lets the key go so that a retry may do the work.

A claim lives as long as its call, and no call lives past the request budget plus a margin
(the web worker is stopped at its timeout, a few seconds past the budget). A claim still in
progress after that belongs to a process that died holding it (killed, out of memory, its
node gone): a repeat takes it over and does the work. The claim's time (``created_at``) is
its fencing token: the takeover is an UPDATE conditional on the time it saw, so of two
repeats only one takes it, and the completion and the release of a claim are conditional on
it too, so a call that outlived its claim cannot overwrite or delete its successor's.
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from arkme.conversations.models import AgentSession, DshClient
from arkme.kernel.batches import delete_in_batches
from arkme.kernel.budget import remaining
from arkme.kernel.errors import Conflict, ErrorCode
from arkme.kernel.sql import column, default_db, hot_cursor, loaded, table

from .models import IdempotencyRecord, IdempotencyStatus

# A claim older than the request budget plus this belongs to a dead process.
CLAIM_MARGIN_SECONDS = 10.0
# What a waiting repeat keeps of its own budget to answer once it stops waiting.
ANSWER_RESERVE_SECONDS = 1.0
POLL_SECONDS, POLL_MAX_SECONDS = 0.05, 0.5

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallResult:
    status: int
    body: dict[str, Any]


_CLAIM_FIELDS = ("client", "session", "key", "tool_name", "request_digest", "status", "created_at")


@functools.cache
def _claim_sql(vendor: str) -> str:
    """The claim's INSERT, written once per database vendor: every keyed call runs it. A key
    already taken inserts nothing and raises nothing, so a repeat needs no savepoint and leaves
    no error (whose traceback would hold the call's frames) behind."""
    names = ", ".join(column(IdempotencyRecord, name) for name in _CLAIM_FIELDS)
    marks = ", ".join(["%s"] * len(_CLAIM_FIELDS))
    once = ", ".join(column(IdempotencyRecord, name) for name in ("client", "session", "key"))  # idempotency_key_once
    returning = f" RETURNING {column(IdempotencyRecord, 'id')}" if connection.features.can_return_columns_from_insert else ""
    return (f"INSERT INTO {table(IdempotencyRecord)} ({names}) VALUES ({marks})"  # noqa: S608
            f" ON CONFLICT ({once}) DO NOTHING{returning}")


@functools.cache
def _complete_sql(vendor: str) -> str:
    sets = ", ".join(f"{column(IdempotencyRecord, name)} = %s" for name in ("status", "response_status", "response_body"))
    # Only while the claim is still this call's (see the module's docstring).
    where = f"{column(IdempotencyRecord, 'id')} = %s AND {column(IdempotencyRecord, 'created_at')} = %s"
    return f"UPDATE {table(IdempotencyRecord)} SET {sets} WHERE {where}"  # noqa: S608


def claim_expiry() -> timedelta:
    """How old an in-progress claim is when no live call can hold it any more."""
    return timedelta(seconds=settings.ARKME_REQUEST_BUDGET_SECONDS + CLAIM_MARGIN_SECONDS)


def _insert_claim(client: DshClient, session: AgentSession, key: str, tool_name: str, digest: str,
                  claimed_at: datetime) -> int | None:
    """The new claim's primary key, or None when the key is taken."""
    db = default_db()
    values: list[Any] = [client.pk, session.pk, key, tool_name, digest, IdempotencyStatus.IN_PROGRESS.value,
                         db.ops.adapt_datetimefield_value(claimed_at)]
    with hot_cursor() as cursor:
        cursor.execute(_claim_sql(db.vendor), values)
        if db.features.can_return_columns_from_insert:
            row = cursor.fetchone()
            return None if row is None else int(row[0])
        return int(cursor.lastrowid) if cursor.rowcount else None


# What a claim's record holds: the call reads nothing else of it before completing it.
_RECORD_FIELDS = ("id", "client_id", "session_id", "key", "tool_name", "request_digest", "status", "created_at")


def _try_insert(client: DshClient, session: AgentSession, key: str, tool_name: str,
                digest: str) -> IdempotencyRecord | None:
    """The new claim's record, or None when the key is taken."""
    db = default_db()
    claimed_at = timezone.now()
    # Outside a transaction the INSERT is its own: no BEGIN and COMMIT around it.
    pk = _insert_claim(client, session, key, tool_name, digest, claimed_at)
    if pk is None:  # the key is taken: a repeat
        return None
    # The row as it was written (the rest deferred), not a new instance: the model's
    # __init__ with keywords walks every field and its default, on every keyed call.
    return loaded(IdempotencyRecord, db.alias, _RECORD_FIELDS, (
        pk, client.pk, session.pk, key, tool_name, digest, IdempotencyStatus.IN_PROGRESS, claimed_at))


def _take_over(existing: IdempotencyRecord) -> IdempotencyRecord | None:
    """The expired claim made this call's, or None when another repeat took it first: one
    conditional UPDATE, which only the first of two concurrent repeats matches."""
    claimed_at = timezone.now()
    taken = IdempotencyRecord.objects.filter(
        pk=existing.pk, status=IdempotencyStatus.IN_PROGRESS, created_at=existing.created_at,
    ).update(created_at=claimed_at)
    if not taken:
        return None
    logger.warning("an Idempotency-Key claim expired in progress (its process died); a repeat took it over")
    existing.created_at = claimed_at
    return existing


def idempotency_claim(*, client: DshClient, session: AgentSession, key: str, tool_name: str,
                      digest: str) -> tuple[IdempotencyRecord | None, CallResult | None]:
    """Claim the key for this call, or return the first call's response to replay.

    A repeat that finds the first call running waits for it while its own request budget
    allows; a claim past its expiry is taken over; ``409 idempotency_in_progress`` is left for
    a call still running when the repeat must answer."""
    record = _try_insert(client, session, key, tool_name, digest)
    if record is not None:
        return record, None
    deadline = time.monotonic() + remaining(settings.ARKME_REQUEST_BUDGET_SECONDS) - ANSWER_RESERVE_SECONDS
    pause = POLL_SECONDS
    while True:
        existing = IdempotencyRecord.objects.filter(client=client, session=session, key=key).first()
        if existing is None:
            # The first call failed and let the key go: this one may do the work.
            record = _try_insert(client, session, key, tool_name, digest)
            if record is not None:
                return record, None
            continue  # another repeat claimed it first: wait for that one
        if existing.request_digest != digest:
            raise Conflict("This Idempotency-Key was used with other arguments.",
                           code=ErrorCode.IDEMPOTENCY_KEY_REUSED)
        if existing.status == IdempotencyStatus.COMPLETE:
            return None, CallResult(existing.response_status or 200, existing.response_body or {})
        if existing.created_at < timezone.now() - claim_expiry():
            record = _take_over(existing)
            if record is not None:
                return record, None
            continue  # another repeat took it over: wait for that one
        if time.monotonic() + pause > deadline:
            raise Conflict("A call with this Idempotency-Key is still running.",
                           code=ErrorCode.IDEMPOTENCY_IN_PROGRESS)
        time.sleep(pause)
        pause = min(pause * 1.5, POLL_MAX_SECONDS)


_RESPONSE_BODY_ENCODER = IdempotencyRecord._meta.get_field("response_body").encoder


def idempotency_complete(record: IdempotencyRecord, result: CallResult) -> None:
    """Keep the response for repeats; a dependency failure or a throttled call (which did
    nothing) lets the key go instead, so a retry runs."""
    if result.status >= 500 or result.status == 429:
        idempotency_release(record)
        return
    record.status = IdempotencyStatus.COMPLETE
    record.response_status, record.response_body = result.status, result.body
    db = default_db()
    body = db.ops.adapt_json_value(result.body, _RESPONSE_BODY_ENCODER)
    with hot_cursor() as cursor:
        cursor.execute(_complete_sql(db.vendor), [record.status.value, result.status, body, record.pk,
                                                  db.ops.adapt_datetimefield_value(record.created_at)])
        if not cursor.rowcount:
            logger.warning("an Idempotency-Key call outlived its claim, which a repeat took over")


def idempotency_release(record: IdempotencyRecord) -> None:
    # Only while the claim is this call's: a successor's stays.
    IdempotencyRecord.objects.filter(pk=record.pk, created_at=record.created_at).delete()


def idempotency_purge(*, batch_size: int = 1000) -> int:
    """Forget keys older than ``ARKME_IDEMPOTENCY_TTL_SECONDS``, a batch per statement. Returns how many."""
    cutoff = timezone.now() - timedelta(seconds=settings.ARKME_IDEMPOTENCY_TTL_SECONDS)
    return delete_in_batches(IdempotencyRecord.objects.filter(created_at__lt=cutoff), batch_size)
