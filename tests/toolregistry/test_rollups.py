"""The hourly roll-up of the audit, which the staff dashboard reads instead of the audit."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from toolregistry.models import LATENCY_BOUNDS_MS, ToolCall, ToolCallHour
from toolregistry.rollups import calls_by_tool, tool_call_series, tool_calls_roll_up


def calls(session, at, rows):
    for tool, outcome, status, ms, surface in rows:
        call = ToolCall.objects.create(session_id=session.pk, session_public_id=session.public_id, tool_name=tool,
                                       outcome=outcome, http_status=status, duration_ms=ms, surface=surface)
        ToolCall.objects.filter(pk=call.pk).update(created_at=at)


def test_the_roll_up_counts_outcomes_errors_and_latency(db, dsh, world):
    from arkme.conversations.models import AgentSession

    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])
    now = timezone.now().replace(minute=30)
    earlier = now - timedelta(hours=2)
    calls(session, earlier, [("arkme_context", "ok", 200, 5, "rest")] * 8 + [
        ("arkme_context", "invalid_arguments", 400, 30, "rest"), ("arkme_context", "ok", 200, 4000, "mcp")])
    calls(session, now, [("arkme_group_member_add", "approval_declined", 403, 1, "mcp")])
    assert tool_calls_roll_up(now=now, since=earlier) == 4
    row = ToolCallHour.objects.get(tool_name="arkme_context", outcome="ok", surface="rest")
    assert (row.calls, row.errors) == (8, 0) and row.latency_buckets[0] == 8
    assert sum(ToolCallHour.objects.get(outcome="ok", surface="mcp").latency_buckets) == 1
    series = tool_call_series(hours=3, now=now)
    assert [point.calls for point in series] == [10, 0, 1]
    assert series[0].calls_by_outcome == {"ok": 9, "invalid_arguments": 1} and series[0].errors == 1
    assert series[0].p50_ms == LATENCY_BOUNDS_MS[0] and series[0].p95_ms == 5000
    assert series[1].p50_ms is None
    assert calls_by_tool(hours=3, now=now) == {"arkme_context": {"calls": 10, "errors": 1},
                                               "arkme_group_member_add": {"calls": 1, "errors": 1}}
    # Again, with one more call in the last hour: rebuilt, not added twice.
    calls(session, now, [("arkme_context", "ok", 200, 5, "rest")])
    tool_calls_roll_up(now=now)
    assert [point.calls for point in tool_call_series(hours=3, now=now)] == [10, 0, 2]
