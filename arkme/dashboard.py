"""The staff dashboard at /admin/dashboard/: how the service is doing, drawn from aggregates.

Tool calls come from the hourly roll-up (``toolregistry.rollups``), never from the audit
itself, so the page costs the same with ten thousand calls or ten million; the rest reads
small, indexed sets (approvals of the last day, pending operations and invitations,
galleries near capacity).
"""
from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from galleries.selectors import galleries_near_capacity, pending_operations_by_age
from groups.selectors import invitations_outlook
from toolregistry.approvals import approvals_funnel
from toolregistry.rollups import calls_by_tool, tool_call_series

from . import charts

HOURS = 24
DECLINED = "approval_declined"


def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    series = tool_call_series(hours=HOURS, now=now)
    outcomes = sorted({outcome for point in series for outcome in point.calls_by_outcome},
                      key=lambda outcome: (outcome != "ok", outcome))
    labels = [timezone.localtime(point.hour).strftime("%H:00") for point in series]
    calls = sum(point.calls for point in series)
    errors = sum(point.errors for point in series)
    declined = sum(point.calls_by_outcome.get(DECLINED, 0) for point in series)
    per_tool = calls_by_tool(hours=HOURS, now=now)
    context = {
        **admin.site.each_context(request),
        "title": "Operations dashboard",
        "calls": calls,
        "error_rate": f"{100 * errors / calls:.1f} %" if calls else "—",
        "charts": [
            ("Tool calls per hour, by outcome",
             charts.stacked_bars("Tool calls per hour by outcome",
                                 [(label, point.calls_by_outcome) for label, point in zip(labels, series, strict=True)],
                                 outcomes, caption=f"last {HOURS} hours")),
            ("Error rate per hour (%)",
             charts.lines("Error rate per hour", [(label, {"errors %": round(100 * p.errors / p.calls, 1) if p.calls else None})
                                                  for label, p in zip(labels, series, strict=True)], ["errors %"])),
            ("Latency per hour (ms, p50 and p95)",
             charts.lines("Latency per hour", [(label, {"p50": p.p50_ms, "p95": p.p95_ms})
                                               for label, p in zip(labels, series, strict=True)], ["p50", "p95"])),
            ("Calls by tool, last 24 hours",
             charts.horizontal_bars("Calls by tool", sorted(((tool, v["calls"]) for tool, v in per_tool.items()),
                                                            key=lambda row: -row[1]))),
            ("Approvals funnel, last 24 hours",
             charts.horizontal_bars("Approvals funnel", approvals_funnel(since=now - timedelta(hours=HOURS),
                                                                         declined=declined))),
            ("Pending gallery adds, by how long they have waited",
             charts.horizontal_bars("Pending operations by age", pending_operations_by_age(now))),
            ("Galleries near capacity", charts.horizontal_bars("Galleries near capacity", galleries_near_capacity())),
            ("Pending invitations", charts.horizontal_bars("Pending invitations", invitations_outlook(now))),
        ],
    }
    return TemplateResponse(request, "admin/arkme_dashboard.html", context)
