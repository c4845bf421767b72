"""The audit and the approval record as JSON lines, for export: each tool call and each
approval decision since a moment, one object per line with a ``type``.

Streamed: rows are read with a server-side cursor where the database has one (``iterator``)
and as tuples, so memory stays bounded however many rows there are. The audit holds no
arguments, approvals or secrets, and neither does an export: only the columns named here.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterator

from django.db.models import QuerySet

from .models import ApprovalDecision, ToolCall

CHUNK = 2000
_CALL_FIELDS = ("id", "created_at", "session_public_id", "tool_name", "tool_id", "outcome", "http_status",
                "duration_ms", "replayed", "surface", "request_id", "approval_id", "standing_grant_id")
_DECISION_FIELDS = ("id", "created_at", "session_public_id", "tool_name", "decision", "via", "approval_id",
                    "standing_grant_id", "tool_call_id")


_KEYS = {"session_public_id": "session", "approval_id": "approval", "standing_grant_id": "standing_grant",
         "tool_call_id": "tool_call"}


def _named(names: tuple[str, ...]) -> list[str]:
    """The export's keys: the session by its public id, related rows by their ids."""
    return [_KEYS.get(name, name) for name in names]


def _objects(kind: str, names: tuple[str, ...], rows: Iterator[tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
    keys = _named(names)
    for row in rows:
        item: dict[str, Any] = {"type": kind}
        for key, value in zip(keys, row, strict=True):
            item[key] = value.isoformat() if isinstance(value, datetime) else value
        yield item


def audit_export(*, since: datetime) -> Iterator[dict[str, Any]]:
    """The tool calls, then the approval decisions, created at or after ``since``, oldest first."""
    calls: QuerySet[Any] = ToolCall.objects.filter(created_at__gte=since).order_by("id").values_list(*_CALL_FIELDS)
    yield from _objects("tool_call", _CALL_FIELDS, calls.iterator(chunk_size=CHUNK))
    decisions: QuerySet[Any] = ApprovalDecision.objects.filter(created_at__gte=since).order_by("id").values_list(
        *_DECISION_FIELDS)
    yield from _objects("approval_decision", _DECISION_FIELDS, decisions.iterator(chunk_size=CHUNK))


def audit_export_lines(*, since: datetime) -> Iterator[str]:
    """``audit_export`` as JSON lines, each ending in a newline."""
    for item in audit_export(since=since):
        yield json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n"
