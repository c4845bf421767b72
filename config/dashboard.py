"""The staff dashboard at /admin/dashboard/: how the service is doing, drawn from aggregates.

Tool calls come from the hourly roll-up (``toolregistry.rollups``), never from the audit
itself, so the page costs the same with ten thousand calls or ten million; the rest reads
small, indexed sets (approvals of the last day, pending operations and invitations,
galleries near capacity).

Errors are two figures, never one: server errors (a 5xx: the service failed the caller) apart
from refusals (a 4xx: the service said no, as the contract asks). Tool calls split by their
outcome; every HTTP answer of this node, tool call or not, is counted by status class in
``arkme_http_requests_total``, drawn here as the node counted it since it started.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from arkme.kernel.errors import ErrorCode
from arkme.kernel.metrics import http_responses
from galleries.selectors import galleries_near_capacity, pending_operations_by_age
from groups.selectors import invitations_outlook
from toolregistry.approvals import approvals_funnel
from toolregistry.audit import INTERRUPTED
from toolregistry.limits import limits_configured, limits_store
from toolregistry.rollups import HourPoint, calls_by_tool, tool_call_series

from . import charts

HOURS = 24
DECLINED = "approval_declined"
THROTTLED = str(ErrorCode.THROTTLED)
# The outcomes of a tool call answered 5xx (or never answered: interrupted); every other error
# outcome is a refusal (4xx).
SERVER_ERRORS = frozenset({ErrorCode.INTERNAL_ERROR, ErrorCode.DEPENDENCY_UNAVAILABLE, ErrorCode.DATABASE_UNAVAILABLE,
                           ErrorCode.STORAGE_UNAVAILABLE, ErrorCode.TASK_QUEUE_UNAVAILABLE, INTERRUPTED})
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")


def _server_errors(point: HourPoint) -> int:
    return sum(count for outcome, count in point.calls_by_outcome.items() if outcome in SERVER_ERRORS)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "—"


def _throttled_by_tool(now: datetime) -> list[tuple[str, int]]:
    throttled = calls_by_tool(hours=HOURS, now=now, outcome=THROTTLED)
    return sorted(((tool, counts["calls"]) for tool, counts in throttled.items()), key=lambda row: -row[1])


def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    series = tool_call_series(hours=HOURS, now=now)
    outcomes = sorted({outcome for point in series for outcome in point.calls_by_outcome},
                      key=lambda outcome: (outcome != "ok", outcome))
    labels = [timezone.localtime(point.hour).strftime("%H:00") for point in series]
    calls = sum(point.calls for point in series)
    errors = sum(point.errors for point in series)
    server_errors = sum(_server_errors(point) for point in series)
    answered = http_responses()
    declined = sum(point.calls_by_outcome.get(DECLINED, 0) for point in series)
    per_tool = calls_by_tool(hours=HOURS, now=now)
    context = {
        **admin.site.each_context(request),
        "title": "Operations dashboard",
        "calls": calls,
        "server_error_rate": _percent(server_errors, calls),
        "refusal_rate": _percent(errors - server_errors, calls),
        "http_5xx": answered.get("5xx", 0),
        "http_4xx": answered.get("4xx", 0),
        "limits": [f"{limit.tool}: {limit.describe()}" for limit in limits_configured()],
        "limits_store": limits_store(),
        "charts": [
            ("Tool calls per hour, by outcome",
             charts.stacked_bars("Tool calls per hour by outcome",
                                 [(label, point.calls_by_outcome) for label, point in zip(labels, series, strict=True)],
                                 outcomes, caption=f"last {HOURS} hours")),
            ("Server errors (5xx) and refusals (4xx) per hour (% of tool calls)",
             charts.lines("Server errors and refusals per hour",
                          [(label, {"refusals %": round(100 * (p.errors - _server_errors(p)) / p.calls, 1) if p.calls
                                    else None,
                                    "server errors %": round(100 * _server_errors(p) / p.calls, 1) if p.calls else None})
                           for label, p in zip(labels, series, strict=True)], ["refusals %", "server errors %"])),
            ("HTTP responses of this node since it started, by status class (every route)",
             charts.horizontal_bars("HTTP responses by status class",
                                    [(status, answered.get(status, 0)) for status in STATUS_CLASSES])),
            ("Latency per hour (ms, p50 and p95)",
             charts.lines("Latency per hour", [(label, {"p50": p.p50_ms, "p95": p.p95_ms})
                                               for label, p in zip(labels, series, strict=True)], ["p50", "p95"])),
            ("Calls by tool, last 24 hours",
             charts.horizontal_bars("Calls by tool", sorted(((tool, v["calls"]) for tool, v in per_tool.items()),
                                                            key=lambda row: -row[1]))),
            ("Approvals funnel, last 24 hours",
             charts.horizontal_bars("Approvals funnel", approvals_funnel(since=now - timedelta(hours=HOURS),
                                                                         declined=declined))),
            ("Throttled calls by tool (429: past a limit), last 24 hours",
             charts.horizontal_bars("Throttled calls by tool", _throttled_by_tool(now))),
            ("Pending gallery adds, by how long they have waited",
             charts.horizontal_bars("Pending operations by age", pending_operations_by_age(now))),
            ("Galleries near capacity", charts.horizontal_bars("Galleries near capacity", galleries_near_capacity())),
            ("Pending invitations", charts.horizontal_bars("Pending invitations", invitations_outlook(now))),
        ],
    }
    return TemplateResponse(request, "admin/arkme_dashboard.html", context)
