"""Sessions as the table grows from 10k to 1M rows, one in ten open and active, on PostgreSQL.

At each size: the stale-session read (the session read plus its once-a-minute refresh, the
touch), timed per call over 200 active sessions; the share of those refreshes that were
heap-only (PostgreSQL's own counters); and the idle purge, timed per session it closes, with
one session in a hundred gone idle. The figure is the worse of the two per-session times at 1M against
10k. The table grows in place, so the sizes are measured one after another (medians of many
rounds); the touch's reset between rounds is not timed.
"""
from __future__ import annotations

import statistics
import time
from datetime import timedelta

from .common import Result

SIZES = (10_000, 100_000, 1_000_000)
ACTIVE_SHARE = 10  # one session in ten is open and active; the rest ended long ago
TOUCHED = 200
# One session in a hundred has gone idle since the last purge (a tenth of the open ones): the
# purge reads every open session (the touch is heap-only because last_seen_at has no index),
# so its cost follows the open sessions, and per session it closes it stays the same.
IDLE_EVERY = 100
ROUNDS = 15


def _grow(client_id: int, account_id: int, have: int, to: int) -> None:
    """Sessions ``have``..``to``: every tenth open and seen now, the others closed a month ago."""
    from django.db import connection

    from arkme.conversations.models import AgentSession

    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {AgentSession._meta.db_table}"  # noqa: S608 - the model's table, values bound
            " (public_id, client_id, account_id, profile, workspace, attachments_mounted, created_at,"
            "  last_seen_at, closed_at)"
            " SELECT 'ses_bench_' || g, %s, %s, 'business', '', false, now() - interval '40 days',"
            "  CASE WHEN g %% %s = 0 THEN now() ELSE now() - interval '30 days' END,"
            "  CASE WHEN g %% %s = 0 THEN NULL ELSE now() - interval '29 days' END"
            " FROM generate_series(%s::bigint, %s::bigint) AS g",
            [client_id, account_id, ACTIVE_SHARE, ACTIVE_SHARE, have, to - 1])
        cursor.execute(f"VACUUM ANALYZE {AgentSession._meta.db_table}")


def _counters() -> tuple[int, int]:
    from django.db import connection

    from arkme.conversations.models import AgentSession

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = %s",
                       [AgentSession._meta.db_table])
        return cursor.fetchone()


def _measure(client, size: int) -> dict:
    from django.utils import timezone

    from arkme.conversations.models import AgentSession
    from arkme.conversations.sessions import TOUCH_INTERVAL, session_for_client, sessions_purge

    # Active sessions spread over the table, so the touched rows sit on many pages.
    step = size // TOUCHED
    touched = [f"ses_bench_{n}" for n in range(0, size, step)][:TOUCHED]
    stale = AgentSession.objects.filter(public_id__in=touched)

    def make_stale() -> None:
        stale.update(last_seen_at=timezone.now() - TOUCH_INTERVAL - timedelta(seconds=1))

    make_stale()
    for public_id in touched:  # warm the plan cache and the pages
        session_for_client(client, public_id)
    times = []
    updated, hot = _counters()
    for _ in range(ROUNDS):
        make_stale()
        started = time.perf_counter()
        for public_id in touched:
            session_for_client(client, public_id)
        times.append((time.perf_counter() - started) / TOUCHED)
    updated_after, hot_after = _counters()
    # The reset above is an update too: count only the touches, as a share of updates that were
    # heap-only (the reset changes the same column, so it is heap-only or not alike).
    hot_share = (hot_after - hot) / max(1, updated_after - updated)

    purge_times = []
    for _ in range(3):
        # Ended sessions opened again as idle ones, spread over the table like the active.
        idle = [f"ses_bench_{n}" for n in range(ACTIVE_SHARE // 2, size, IDLE_EVERY)]
        AgentSession.objects.filter(public_id__in=idle).update(closed_at=None, last_seen_at=timezone.now()
                                                              - timedelta(days=30))
        started = time.perf_counter()
        closed = sessions_purge()
        purge_times.append((time.perf_counter() - started) / max(1, closed))
    return {"touch_ms": statistics.median(times) * 1000, "heap_only": hot_share,
            "purge_ms_per_session": statistics.median(purge_times) * 1000}


def run() -> Result:
    from django.db import connection

    from arkme.accounts.models import Account
    from arkme.conversations.models import DshClient

    if connection.vendor != "postgresql":
        return Result("sessions_growth", None, "", "itself at 10k sessions", "≤ 1.5× per session at 1M, heap-only",
                      skipped="needs PostgreSQL")
    client = DshClient.objects.create(name="bench", key_prefix="bench", key_hash="0" * 64)
    account = Account.objects.create(display_name="Bench")
    rows, have = {}, 0
    for size in SIZES:
        _grow(client.pk, account.pk, have, size)
        have = size
        rows[size] = _measure(client, size)
    small, large = rows[SIZES[0]], rows[SIZES[-1]]
    touch = large["touch_ms"] / small["touch_ms"]
    purge = large["purge_ms_per_session"] / small["purge_ms_per_session"]
    heap_only = min(row["heap_only"] for row in rows.values())
    worst = max(touch, purge)
    return Result("sessions_growth", round(worst, 3), "× per-session time at 1M (worse of touch, purge)",
                  "itself at 10k sessions", "≤ 1.5× per session at 1M, ≥ 95% of touches heap-only",
                  worst <= 1.5 and heap_only >= 0.95,
                  {"touch_ratio": round(touch, 3), "purge_ratio": round(purge, 3), "heap_only_min": round(heap_only, 3),
                   **{f"at_{size}": {k: round(v, 4) for k, v in row.items()} for size, row in rows.items()}})
