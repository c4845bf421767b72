"""Hourly roll-ups of the tool-call audit, and the series the staff dashboard draws from them.

The audit can hold tens of millions of rows; the dashboard never reads it. A periodic task
rebuilds the roll-up rows of the hours that changed since its last run, reading only those
hours' audit rows through the ``created_at`` index.

A write's row changes after it is inserted (``in_progress`` until the call answers), so the
hours whose rows may still change are rolled up again: those of the last ``SETTLE`` (twice
the time after which a row still ``in_progress`` is an interrupted call, which covers the
task's five-minute period). A row still ``in_progress`` is counted as such while its call may
still be running, and as ``interrupted`` (a server failure: the caller got no answer) after.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from arkme.kernel.metrics import LATENCY_BOUNDS_MS

from .audit import INTERRUPTED, INTERRUPTED_AFTER, outcome_seen
from .models import ToolCall, ToolCallHour

HOUR = timedelta(hours=1)
SETTLE = 2 * INTERRUPTED_AFTER


def _hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _bucket(duration_ms: int) -> int:
    return bisect.bisect_left(LATENCY_BOUNDS_MS, duration_ms)


def tool_calls_roll_up(*, now: datetime | None = None, since: datetime | None = None) -> int:
    """Rebuild the roll-up of every hour from ``since`` (default: the last hour rolled up, or
    a day ago) to now. Returns how many roll-up rows were written."""
    now = now or timezone.now()
    if since is None:
        latest = ToolCallHour.objects.aggregate(latest=Max("hour"))["latest"]
        since = min(latest, now - SETTLE) if latest is not None else now - timedelta(days=1)
    start = _hour_of(since)
    written = 0
    hour = start
    while hour <= now:
        written += _roll_up_hour(hour, now)
        hour += HOUR
    return written


def _roll_up_hour(hour: datetime, now: datetime) -> int:
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0] + [0] * (len(LATENCY_BOUNDS_MS) + 1))
    rows = ToolCall.objects.filter(created_at__gte=hour, created_at__lt=hour + HOUR).values_list(
        "tool_name", "outcome", "surface", "http_status", "duration_ms", "created_at").iterator(chunk_size=5000)
    for tool, outcome, surface, status, duration, created_at in rows:
        seen = outcome_seen(outcome, created_at, now)
        entry = counts[(tool, seen, surface)]
        entry[0] += 1
        entry[1] += status >= 400 or seen == INTERRUPTED
        entry[2 + _bucket(duration)] += 1
    with transaction.atomic():
        ToolCallHour.objects.filter(hour=hour).delete()
        ToolCallHour.objects.bulk_create([
            ToolCallHour(hour=hour, tool_name=tool, outcome=outcome, surface=surface, calls=entry[0],
                         errors=entry[1], latency_buckets=entry[2:])
            for (tool, outcome, surface), entry in counts.items()
        ])
    return len(counts)


@dataclass(frozen=True)
class HourPoint:
    hour: datetime
    calls_by_outcome: dict[str, int]
    calls: int
    errors: int
    p50_ms: int | None
    p95_ms: int | None


def _percentile(buckets: list[int], fraction: float) -> int | None:
    total = sum(buckets)
    if not total:
        return None
    seen = 0
    for index, count in enumerate(buckets):
        seen += count
        if seen >= fraction * total:
            return LATENCY_BOUNDS_MS[index] if index < len(LATENCY_BOUNDS_MS) else LATENCY_BOUNDS_MS[-1] * 2
    return None


def tool_call_series(*, hours: int = 24, now: datetime | None = None, tool: str | None = None) -> list[HourPoint]:
    """One point an hour for the last ``hours``: calls by outcome, errors, and the p50 and p95
    latency (upper bounds of the roll-up's buckets)."""
    now = now or timezone.now()
    first = _hour_of(now) - (hours - 1) * HOUR
    rows = ToolCallHour.objects.filter(hour__gte=first)
    if tool:
        rows = rows.filter(tool_name=tool)
    by_hour: dict[datetime, list[ToolCallHour]] = defaultdict(list)
    for row in rows:
        by_hour[row.hour].append(row)
    series = []
    for index in range(hours):
        hour = first + index * HOUR
        found = by_hour.get(hour, [])
        outcomes: dict[str, int] = defaultdict(int)
        buckets = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        for row in found:
            outcomes[row.outcome] += row.calls
            buckets = [a + b for a, b in zip(buckets, row.latency_buckets, strict=True)]
        series.append(HourPoint(hour=hour, calls_by_outcome=dict(outcomes), calls=sum(r.calls for r in found),
                                errors=sum(r.errors for r in found), p50_ms=_percentile(buckets, 0.5),
                                p95_ms=_percentile(buckets, 0.95)))
    return series


def calls_by_tool(*, hours: int = 24, now: datetime | None = None,
                  outcome: str | None = None) -> dict[str, dict[str, int]]:
    """Calls per tool over the last ``hours`` (those that ended with ``outcome`` only, when
    given): ``{tool: {"calls", "errors"}}``."""
    now = now or timezone.now()
    first = _hour_of(now) - (hours - 1) * HOUR
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "errors": 0})
    rows = ToolCallHour.objects.filter(hour__gte=first)
    if outcome is not None:
        rows = rows.filter(outcome=outcome)
    for row in rows.values("tool_name", "calls", "errors"):
        totals[row["tool_name"]]["calls"] += row["calls"]
        totals[row["tool_name"]]["errors"] += row["errors"]
    return dict(totals)
