"""The audit of tool calls: what ran and how it ended, never its arguments."""
from __future__ import annotations

import atexit
import functools
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.kernel.logs import current_request_id
from arkme.kernel.sql import column, hot_cursor, table

from .audit_writer import AuditWriter, Row
from .models import Surface, ToolCall

OK = "ok"
SERVER_ERROR = "server_error"


_COLUMNS = ("session", "session_public_id", "tool_name", "tool_id", "outcome", "http_status", "duration_ms",
            "replayed", "surface", "request_id", "created_at")


@functools.cache
def _insert_sql(vendor: str) -> str:
    """The audit row's INSERT, written once per database vendor: every tool call writes one, and
    building it with the ORM cost more than the write itself (docs/PERFORMANCE.md)."""
    names = ", ".join(column(ToolCall, name) for name in _COLUMNS)
    marks = ", ".join(["%s"] * len(_COLUMNS))
    return f"INSERT INTO {table(ToolCall)} ({names}) VALUES ({marks})"  # noqa: S608 - identifiers from the model


def tool_call_record(*, session: AgentSession, tool_name: str, tool_id: str, outcome: str, http_status: int,
                     duration_ms: int, replayed: bool, surface: Surface = Surface.REST) -> None:
    """Audit one call; the row is written behind the call (``audit_writer``), or at once inside
    a transaction."""
    writer.add((session.pk, session.public_id, tool_name[:64], tool_id, outcome[:64], http_status, duration_ms,
                replayed, str(surface), current_request_id(), connection.ops.adapt_datetimefield_value(timezone.now())))


def insert_rows(rows: Sequence[Row]) -> None:
    """Insert audit rows, each as ``_COLUMNS`` in order (``session`` as its primary key)."""
    with hot_cursor() as cursor:
        if len(rows) == 1:
            cursor.execute(_insert_sql(cursor.db.vendor), rows[0])
        else:
            cursor.executemany(_insert_sql(cursor.db.vendor), rows)


def _write_behind_seconds() -> float:
    return float(settings.ARKME_AUDIT_WRITE_BEHIND_SECONDS)


# The process's writer: rows gathered from every thread, written by one of its own.
writer = AuditWriter(insert_rows, window=_write_behind_seconds, link=_COLUMNS.index("session"))
atexit.register(writer.close)


def tool_calls_prune(*, older_than_days: int, batch_size: int = 5000) -> int:
    """Delete audit rows older than ``older_than_days``, a batch per statement. Returns how many."""
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    old = ToolCall.objects.filter(created_at__lt=timezone.now() - timedelta(days=older_than_days))
    deleted = 0
    while batch := list(old.order_by("pk").values_list("pk", flat=True)[:batch_size]):
        deleted += ToolCall.objects.filter(pk__in=batch).delete()[0]
    return deleted
