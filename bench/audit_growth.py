"""The staff audit list as the tool-call audit grows from 10k to 10M rows, on PostgreSQL.

At each size, through Django's test client signed in as staff: the first page of
``/admin/toolregistry/toolcall/`` unfiltered, filtered by a rarely called tool, by errors
only, by failures only, by surface, and searched for ``ok``, for an error code and for one
request id. The figure is the worst page's time at 10M against its time at the smallest
size where it shows a full page of 100 rows (10k calls; 100k for the filters matching one call
in a thousand). The table grows in place, so the sizes are measured one after another
(medians of many requests). A page's count stops at 10,000 rows, so a rare filter's page
costs more as its matches approach that cap and no more after it.
"""
from __future__ import annotations

import statistics
import time

from .common import Result

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
REQUESTS = 15
# How the generated calls spread: the first tool is called one time in a thousand.
TOOLS = ("arkme_id_change", "arkme_context", "arkme_extension_preview_add", "arkme_group_member_candidates",
         "arkme_group_member_add", "arkme_extension_preview_delete", "arkme_extension_preview_reorder")
# Each page with the share of calls its filter matches (None: one row whatever the size).
PAGES = {
    "unfiltered": ({}, 1.0),
    "rare tool": ({"tool": "arkme_id_change"}, 0.001),
    "errors only": ({"outcome": "errors"}, 0.031),
    "failed (5xx)": ({"outcome": "failed"}, 0.001),
    "over MCP": ({"surface__exact": "mcp"}, 0.1),
    "search ok": ({"q": "ok"}, 0.969),
    "search an error code": ({"q": "revision_conflict"}, 0.03),
    "search a request id": ({"q": "req-5000"}, None),
}
FULL_PAGE = 100
BASELINE = "the same page at the smallest size where it is full (10k calls, or 100k for a filter matching 1 in 1,000)"
GOAL = "≤ 1.5× at 10M on every page"


def baseline_size(share: float | None) -> int:
    """The smallest size at which the page shows a full page of rows: below it a page renders
    fewer rows, which is no measure of growth."""
    if share is None:
        return SIZES[0]
    return next(size for size in SIZES if size * share >= FULL_PAGE)


def _grow(have: int, to: int) -> None:
    from django.db import connection

    from toolregistry.models import ToolCall

    # One call in a thousand is the rare tool; 3% are refused, 0.1% failed; 10% came over MCP.
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ToolCall._meta.db_table}"  # noqa: S608 - the model's table, values bound
            " (session_public_id, tool_name, tool_id, outcome, http_status, duration_ms, replayed, surface,"
            "  request_id, created_at)"
            " SELECT 'ses_' || (g %% 5000), CASE WHEN g %% 1000 = 7 THEN %s ELSE (%s::text[])[1 + g %% 6] END, '',"
            "  CASE WHEN g %% 1000 = 3 THEN 'internal_error' WHEN g %% 100 < 3 THEN 'revision_conflict' ELSE 'ok' END,"
            "  CASE WHEN g %% 1000 = 3 THEN 500 WHEN g %% 100 < 3 THEN 409 ELSE 200 END,"
            "  g %% 300, g %% 500 = 1, CASE WHEN g %% 10 = 0 THEN 'mcp' ELSE 'rest' END, 'req-' || g,"
            "  now() - make_interval(secs => 20000000 - g)"
            " FROM generate_series(%s::bigint, %s::bigint) AS g",
            [TOOLS[0], list(TOOLS[1:]), have, to - 1])
        cursor.execute(f"VACUUM ANALYZE {ToolCall._meta.db_table}")


def _page_ms(client, params: dict) -> float:
    url = "/admin/toolregistry/toolcall/"
    response = client.get(url, params)
    assert response.status_code == 200, (params, response.status_code)
    times = []
    for _ in range(REQUESTS):
        started = time.perf_counter()
        client.get(url, params)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def run() -> Result:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    if connection.vendor != "postgresql":
        return Result("audit_growth", None, "", BASELINE, GOAL, skipped="needs PostgreSQL")
    staff = get_user_model().objects.create_superuser("bench", password=None)
    client = Client()
    client.force_login(staff)
    rows, have = {}, 0
    for size in SIZES:
        _grow(have, size)
        have = size
        rows[size] = {name: round(_page_ms(client, params), 2) for name, (params, _) in PAGES.items()}
    large = rows[SIZES[-1]]
    ratios = {name: round(large[name] / rows[baseline_size(share)][name], 3) for name, (_, share) in PAGES.items()}
    worst = max(ratios, key=lambda name: ratios[name])
    return Result("audit_growth", ratios[worst], "× page time at 10M calls (worst page)", BASELINE, GOAL,
                  ratios[worst] <= 1.5,
                  {"worst_page": worst, "ratios": ratios, **{f"ms_at_{size}": row for size, row in rows.items()}})
