"""The audit of tool calls: what ran and how it ended, never its arguments.

Every call's row is durable before its answer leaves the process (DESIGN.md, "Nothing that
answered is lost"): nothing is held in memory, no thread writes behind the calls, and a row
that cannot be written fails its call (a database error, answered as the outage it is).

- A read, a refusal, a replay: one INSERT of the finished row before the call answers.
- A write: its row is inserted ``in_progress`` before the effect runs and updated with how the
  call ended before it answers (``tool_call_begin``, ``tool_call_end``). The services commit a
  write's effect in transactions of their own, sometimes several (a confirm stores its images,
  then commits the gallery in a durable block; a refusal commits the operation's failure and
  then raises), so the row cannot literally join "the" transaction of the effect; inserted
  first, it is durable no later than the effect (the effect's synchronous commit flushes the
  WAL up to and past it). A row left ``in_progress`` is a call whose process died mid-call:
  the roll-ups count it as ``interrupted`` (``rollups.py``).

On PostgreSQL, a row written outside a transaction commits asynchronously (its statement sets
``synchronous_commit`` off for its own, implicit, transaction: ``set_config`` with ``is_local``
lasts until that transaction ends, and a commit follows the setting in effect when it
commits). Such a commit costs no fsync: the WAL is in PostgreSQL's memory when the statement
returns, so the row survives the application's death (a SIGKILL, the OOM killer, a worker
timeout) and is written out by the WAL writer within ``3 × wal_writer_delay`` (600 ms by
default). What it does not survive is PostgreSQL itself crashing (or its machine losing power)
within that fraction of a second. That is acceptable for these rows: they record calls that
changed nothing (reads, refusals, replays), or the end of a write whose effect was already
made durable with its ``in_progress`` row; such a crash also loses the connections the answers
were on. A row written inside a transaction (the declined approval's, written with its
voiding) joins that transaction and commits with it, as that transaction commits.
"""
from __future__ import annotations

import functools
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.kernel.batches import delete_in_batches
from arkme.kernel.logs import current_request_id
from arkme.kernel.sql import column, default_db, field_of, hot_cursor, table

from .models import ApprovalDecision, Surface, ToolCall

OK = "ok"
SERVER_ERROR = "server_error"
# A write's row while its effect runs; left so, the call never answered (its process died).
IN_PROGRESS = "in_progress"
# What the roll-ups and the staff pages call a row left ``in_progress`` for longer than any
# call runs (the request budget, gunicorn's worker timeout): its process died mid-call.
INTERRUPTED = "interrupted"
INTERRUPTED_AFTER = timedelta(minutes=15)
# The status of a call that has not answered (yet): no HTTP status was sent.
NO_STATUS = 0

_COLUMNS = ("session", "session_public_id", "tool_name", "tool_id", "outcome", "http_status", "duration_ms",
            "replayed", "surface", "request_id", "created_at", "approval", "standing_grant")
# A write's ending names what allowed it: the approval it used or the standing grant that
# covered it (known only once the effect ran, in the same transaction as the use).
_ENDING = ("outcome", "http_status", "duration_ms", "approval", "standing_grant")
# One row, as a SELECT of nothing but its values, committing asynchronously. The casts type the
# values with server-side binding (the default on PostgreSQL), where a bare parameter in a
# SELECT list would be text.
_ASYNC_COMMIT = "(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit"


def outcome_seen(outcome: str, created_at: datetime, now: datetime) -> str:
    """A row's outcome as the staff pages and roll-ups show it: an ``in_progress`` row too old
    to be running is ``interrupted``."""
    if outcome == IN_PROGRESS and created_at < now - INTERRUPTED_AFTER:
        return INTERRUPTED
    return outcome


def _marks(names: tuple[str, ...], vendor: str) -> list[str]:
    if vendor != "postgresql":
        return ["%s"] * len(names)
    return [f"%s::{field_of(ToolCall, name).db_type(connection)}" for name in names]


@functools.cache
def _insert_sql(vendor: str, asynchronous: bool, returning: bool) -> str:
    """The audit row's INSERT, written once per database vendor and form: every tool call writes
    one, and building it with the ORM cost more than the write itself (docs/PERFORMANCE.md)."""
    names = ", ".join(column(ToolCall, name) for name in _COLUMNS)
    marks = ", ".join(_marks(_COLUMNS, vendor))
    values = f"SELECT {marks} FROM {_ASYNC_COMMIT}" if asynchronous else f"VALUES ({marks})"  # noqa: S608
    back = f" RETURNING {column(ToolCall, 'id')}" if returning else ""
    # Identifiers from the model, values as parameters.
    return f"INSERT INTO {table(ToolCall)} ({names}) {values}{back}"


@functools.cache
def _end_sql(vendor: str, asynchronous: bool) -> str:
    sets = ", ".join(f"{column(ToolCall, name)} = {mark}"
                     for name, mark in zip(_ENDING, _marks(_ENDING, vendor), strict=True))
    source = f" FROM {_ASYNC_COMMIT}" if asynchronous else ""
    return (f"UPDATE {table(ToolCall)} SET {sets}{source} "  # noqa: S608 - identifiers from the model
            f"WHERE {table(ToolCall)}.{column(ToolCall, 'id')} = %s")


def _asynchronous(vendor: str) -> bool:
    """Whether this statement is its own transaction on PostgreSQL: inside a transaction the
    row commits with it, and setting ``synchronous_commit`` would make that whole transaction
    (an approval's voiding) commit asynchronously too."""
    return vendor == "postgresql" and not default_db().in_atomic_block


def _row(session: AgentSession, tool_name: str, tool_id: str, outcome: str, http_status: int, duration_ms: int,
         replayed: bool, surface: Surface, approval: int | None = None) -> tuple[object, ...]:
    return (session.pk, session.public_id, tool_name[:64], tool_id, outcome[:64], http_status, duration_ms,
            replayed, str(surface), current_request_id(), connection.ops.adapt_datetimefield_value(timezone.now()),
            approval, None)


def insert_row(row: tuple[object, ...]) -> None:
    """Insert one audit row, its values as ``_COLUMNS`` in order (``session``, ``approval`` and
    ``standing_grant`` as primary keys), committed before this returns (asynchronously on PostgreSQL, see the docstring)."""
    with hot_cursor() as cursor:
        vendor = cursor.db.vendor
        cursor.execute(_insert_sql(vendor, _asynchronous(vendor), False), row)


def tool_call_record(*, session: AgentSession, tool_name: str, tool_id: str, outcome: str, http_status: int,
                     duration_ms: int, replayed: bool, surface: Surface = Surface.REST,
                     approval: int | None = None) -> None:
    """Audit one finished call before it answers; a database error is raised, not swallowed,
    so a call whose row cannot be written does not answer as if it had been. ``approval``: the
    approval the call was about (a declined one)."""
    insert_row(_row(session, tool_name, tool_id, outcome, http_status, duration_ms, replayed, surface, approval))


def tool_call_begin(*, session: AgentSession, tool_name: str, tool_id: str, replayed: bool = False,
                    surface: Surface = Surface.REST) -> int:
    """Audit a write before its effect runs: its row, ``in_progress``. Returns the row's id for
    ``tool_call_end``."""
    row = _row(session, tool_name, tool_id, IN_PROGRESS, NO_STATUS, 0, replayed, surface)
    with hot_cursor() as cursor:
        vendor = cursor.db.vendor
        cursor.execute(_insert_sql(vendor, _asynchronous(vendor), True), row)
        return int(cursor.fetchone()[0])


def tool_call_end(call: int, *, outcome: str, http_status: int, duration_ms: int, approval: int | None = None,
                  standing_grant: int | None = None) -> None:
    """How a begun call ended, and what allowed it, written before it answers."""
    with hot_cursor() as cursor:
        vendor = cursor.db.vendor
        cursor.execute(_end_sql(vendor, _asynchronous(vendor)),
                       (outcome[:64], http_status, duration_ms, approval, standing_grant, call))


def tool_calls_prune(*, older_than_days: int, batch_size: int = 5000) -> int:
    """Delete audit rows older than ``older_than_days``, a batch per statement. Returns how many."""
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    cutoff = timezone.now() - timedelta(days=older_than_days)
    # The approval record goes with the calls it explains, kept as long.
    delete_in_batches(ApprovalDecision.objects.filter(created_at__lt=cutoff), batch_size)
    return delete_in_batches(ToolCall.objects.filter(created_at__lt=cutoff), batch_size)
