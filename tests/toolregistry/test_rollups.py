"""The hourly roll-up of the audit, which the staff dashboard reads instead of the audit."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from arkme.kernel.metrics import LATENCY_BOUNDS_MS
from toolregistry.models import ToolCall, ToolCallHour
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


def test_a_write_left_in_progress_is_rolled_up_as_an_interrupted_failure(db, dsh, world):
    """A row still ``in_progress`` may be a call still running; once no call could be, its
    process died mid-call, and the caller got no answer: an error."""
    from arkme.conversations.models import AgentSession

    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])
    now = timezone.now().replace(minute=30)
    calls(session, now - timedelta(hours=1), [("arkme_id_change", "in_progress", 0, 0, "rest")])
    calls(session, now - timedelta(seconds=5), [("arkme_id_change", "in_progress", 0, 0, "rest")])
    tool_calls_roll_up(now=now, since=now - timedelta(hours=2))
    series = tool_call_series(hours=2, now=now)
    assert series[0].calls_by_outcome == {"interrupted": 1} and series[0].errors == 1
    assert series[1].calls_by_outcome == {"in_progress": 1} and series[1].errors == 0


def test_the_hour_a_running_write_began_in_is_rolled_up_again_once_it_ends(db, dsh, world):
    """The write began just before the hour turned and answered just after the roll-up read it."""
    from arkme.conversations.models import AgentSession

    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    calls(session, hour - timedelta(seconds=1), [("arkme_id_change", "in_progress", 0, 0, "rest")])
    calls(session, hour + timedelta(seconds=1), [("arkme_context", "ok", 200, 5, "rest")])
    tool_calls_roll_up(now=hour + timedelta(seconds=2), since=hour - timedelta(hours=1))
    ToolCall.objects.filter(outcome="in_progress").update(outcome="ok", http_status=200, duration_ms=1500)
    tool_calls_roll_up(now=hour + timedelta(minutes=5))
    assert tool_call_series(hours=2, now=hour)[0].calls_by_outcome == {"ok": 1}


def test_prometheus_and_the_roll_up_count_calls_into_the_same_buckets():
    """One set of latency buckets: a p95 on the dashboard and one from Prometheus agree."""
    from arkme.kernel.metrics import TOOL_SECONDS

    TOOL_SECONDS.labels("bucket_check", "ok", "rest")
    [family] = TOOL_SECONDS.collect()
    bounds = [float(sample.labels["le"]) for sample in family.samples
              if sample.name.endswith("_bucket") and sample.labels["tool"] == "bucket_check"]
    assert bounds == [ms / 1000 for ms in LATENCY_BOUNDS_MS] + [float("inf")]
    TOOL_SECONDS.remove("bucket_check", "ok", "rest")
