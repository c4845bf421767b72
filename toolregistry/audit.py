"""The audit of tool calls: what ran and how it ended, never its arguments."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from arkme.conversations.models import AgentSession

from .models import Surface, ToolCall

OK = "ok"
SERVER_ERROR = "server_error"


def tool_call_record(*, session: AgentSession, tool_name: str, tool_id: str, outcome: str, http_status: int,
                     duration_ms: int, replayed: bool, surface: Surface = Surface.REST) -> ToolCall:
    return ToolCall.objects.create(
        session=session, session_public_id=session.public_id, tool_name=tool_name[:64], tool_id=tool_id, outcome=outcome[:64],
        http_status=http_status, duration_ms=duration_ms, replayed=replayed,
        surface=surface,
    )


def tool_calls_prune(*, older_than_days: int, batch_size: int = 5000) -> int:
    """Delete audit rows older than ``older_than_days``, a batch per statement. Returns how many."""
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    old = ToolCall.objects.filter(created_at__lt=timezone.now() - timedelta(days=older_than_days))
    deleted = 0
    while batch := list(old.order_by("pk").values_list("pk", flat=True)[:batch_size]):
        deleted += ToolCall.objects.filter(pk__in=batch).delete()[0]
    return deleted
