"""The audit of tool calls: what ran and how it ended, never its arguments."""
from __future__ import annotations

from arkme.conversations.models import AgentSession

from .models import ToolCall

OK = "ok"
SERVER_ERROR = "server_error"


def tool_call_record(*, session: AgentSession, tool_name: str, tool_id: str, outcome: str, http_status: int,
                     duration_ms: int, replayed: bool) -> ToolCall:
    return ToolCall.objects.create(
        session=session, tool_name=tool_name[:64], tool_id=tool_id, outcome=outcome[:64],
        http_status=http_status, duration_ms=duration_ms, replayed=replayed,
    )
