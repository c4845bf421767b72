"""Limits on tool calls per DSH client, account or session (``ARKME_RATE_LIMITS``), counted
where every web process and node sees the same counts.

A limit allows ``calls`` calls of a tool (or of every tool together, ``*``) per ``period``
seconds per client, account or session. Windows are fixed and aligned to the epoch (a minute's
window starts at each whole minute): at most ``calls`` calls are let through in one window, so
across a window's end a burst may reach twice that, which the longer limits (an hour, a day) of
the same tool bound. A call must pass every limit that applies to it; a refused call counts
against none, so a client that keeps retrying early does not push its own window further.

The counters live in Redis when the Celery broker is Redis (one hash per counter, updated by
one script on Redis's clock, expiring with its window), else in the database (``RateWindow``,
one row per counter, incremented and checked in one transaction that is rolled back when a
limit is past; rows whose window ended are pruned with the idempotency keys). A store that
cannot be reached within ``ARKME_RATE_LIMIT_TIMEOUT_SECONDS`` fails closed for writes (503
``dependency_unavailable``: nothing may be sent uncounted) and open for reads.
"""
from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.utils import timezone
from redis.backoff import NoBackoff
from redis.retry import Retry

from arkme.kernel.batches import delete_in_batches
from arkme.kernel.errors import DependencyUnavailable, Throttled
from arkme.kernel.metrics import RATE_LIMITER_FAULTS, TOOL_CALLS_THROTTLED
from arkme.kernel.sql import column, table

from .calls import Call
from .catalog import CATALOG
from .metadata import Effect
from .models import RateWindow

logger = logging.getLogger(__name__)

ANY_TOOL = "*"
REDIS_PREFIX = "arkme:limits:"
PERIOD_WORDS = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}
# The database store's clock (Redis keeps its own); a test may stop it.
clock = time.time


@dataclass(frozen=True)
class Limit:
    """``calls`` calls of ``tool`` (a catalog name, or ``*`` for every tool together) per
    ``period`` seconds per ``scope`` (``client``, ``account`` or ``session``)."""

    tool: str
    calls: int
    period: int
    scope: str

    def key(self, call: Call) -> str:
        """The counter of this limit for the call's client, account or session: names and row
        ids, nothing secret."""
        return f"{self.tool}:{self.period}:{self.scope}:{_scope_id(call, self.scope)}"

    def describe(self) -> str:
        return f"{self.calls} a {PERIOD_WORDS.get(self.period, f'{self.period} s')} per {self.scope}"


def _scope_id(call: Call, scope: str) -> int:
    if scope == "client":
        return int(call.client.pk)
    if scope == "account":
        return int(call.session.account_id)
    return int(call.session.pk)


class LimiterUnavailable(Exception):
    """The store of the counters could not be reached or did not answer in time."""


# --- Which limits apply ------------------------------------------------------------------

Rules = Sequence[tuple[str, int, int, str]]  # the setting: (tool, calls, period, scope)
_index: tuple[Rules, dict[str, tuple[Limit, ...]], tuple[Limit, ...]] | None = None


def _limits(rules: Rules) -> tuple[dict[str, tuple[Limit, ...]], tuple[Limit, ...]]:
    """The limits per tool name (its own and the ``*`` ones), and the ``*`` ones alone."""
    limits = tuple(Limit(*rule) for rule in rules)
    every = tuple(limit for limit in limits if limit.tool == ANY_TOOL)
    by_tool: dict[str, tuple[Limit, ...]] = {}
    for limit in limits:
        if limit.tool != ANY_TOOL:
            by_tool[limit.tool] = (*by_tool.get(limit.tool, ()), limit)
    return {tool: (*own, *every) for tool, own in by_tool.items()}, every


def limits_for(tool_name: str) -> tuple[Limit, ...]:
    """The limits a call of ``tool_name`` must pass. Built once per value of the setting: a
    read with no limit (the default) costs a dictionary look-up."""
    global _index
    rules = settings.ARKME_RATE_LIMITS
    index = _index
    if index is None or index[0] is not rules:
        by_tool, every = _limits(rules)
        index = _index = (rules, by_tool, every)
    return index[1].get(tool_name, index[2])


def limits_configured() -> list[Limit]:
    """Every limit in force, as configured (for the staff dashboard)."""
    return [Limit(*rule) for rule in settings.ARKME_RATE_LIMITS]


def limits_store() -> str:
    """Where the counters are kept, in words."""
    return "Redis" if settings.ARKME_RATE_LIMIT_REDIS_URL else "the database"


def limits_validate(rules: Rules) -> None:
    """Refuse, at start-up, a limit that names a tool the catalog does not have."""
    names = {module.METADATA.name for module in CATALOG.modules}
    unknown = sorted({rule[0] for rule in rules if rule[0] != ANY_TOOL and rule[0] not in names})
    if unknown:
        raise ImproperlyConfigured(f"ARKME_RATE_LIMITS names tools the catalog does not have: {', '.join(unknown)}")


# --- The pipeline's step -------------------------------------------------------------------

def call_limit(call: Call, *, count: bool = True) -> None:
    """Count the call against every limit that applies to it, or raise ``Throttled`` (429,
    with ``retry_after_seconds``) when one is past, counting nothing. ``count=False`` looks
    without counting (a door about to ask its human). A store that cannot be reached raises
    ``DependencyUnavailable`` for a write and lets a read through."""
    tool = call.known
    limits = limits_for(tool.metadata.name)
    if not limits:
        return
    keys = [limit.key(call) for limit in limits]
    try:
        wait, refusing = _store_check(keys, limits, count=count)
    except LimiterUnavailable:
        if tool.metadata.effect is Effect.WRITE:
            RATE_LIMITER_FAULTS.labels("refused").inc()
            raise DependencyUnavailable("The call limits cannot be counted now; nothing was done, and the call "
                                        "is safe to retry.") from None
        RATE_LIMITER_FAULTS.labels("allowed").inc()
        return
    if refusing is None:
        return
    limit = limits[refusing]
    seconds = max(1, math.ceil(wait))
    TOOL_CALLS_THROTTLED.labels(tool.metadata.name, limit.scope).inc()
    tools = "tool calls" if limit.tool == ANY_TOOL else f"calls of {limit.tool}"
    raise Throttled(f"Too many {tools}: at most {limit.describe()}. Nothing was done; retry in {seconds} s.",
                    retry_after_seconds=seconds)


def _store_check(keys: list[str], limits: Sequence[Limit], *, count: bool) -> tuple[float, int | None]:
    """How long until the call may run and the index of the limit that holds it back, or
    ``(0, None)`` when it may run now (and was counted, with ``count``)."""
    url = settings.ARKME_RATE_LIMIT_REDIS_URL
    if url:
        return _redis_check(_redis(url, settings.ARKME_RATE_LIMIT_TIMEOUT_SECONDS), keys, limits, count=count)
    return _database_check(keys, limits, count=count)


# --- Redis ---------------------------------------------------------------------------------

# Every counter is a hash: ``s``, its window's start (seconds), and ``n``, the calls counted in
# it. One script reads them all and counts the call in each only when none is past its limit,
# on Redis's clock, so nodes whose clocks differ agree on the windows. KEYS: the counters;
# ARGV[1]: "1" to count, "0" to look; then per counter its calls and its period (ms).
# Answers {ms to wait, index of the limit that holds the call back (1-based), or 0}.
_CHECK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait, worst, starts = 0, 0, {}
for i, key in ipairs(KEYS) do
  local calls, period = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local start = now - (now % period)
  starts[i] = start
  local stored = redis.call('HMGET', key, 's', 'n')
  local hits = 0
  if tonumber(stored[1]) == start / 1000 then hits = tonumber(stored[2]) or 0 end
  if hits >= calls and start + period - now > wait then
    wait, worst = start + period - now, i
  end
end
if worst > 0 or ARGV[1] == '0' then return {wait, worst} end
for i, key in ipairs(KEYS) do
  local period = tonumber(ARGV[2 * i + 1])
  if tonumber(redis.call('HGET', key, 's')) == starts[i] / 1000 then
    redis.call('HINCRBY', key, 'n', 1)
  else
    redis.call('HSET', key, 's', starts[i] / 1000, 'n', 1)
  end
  redis.call('PEXPIRE', key, starts[i] + period - now)
end
return {0, 0}
"""


@functools.lru_cache(maxsize=4)
def _redis(url: str, timeout: float) -> tuple[Any, Any]:
    """A client of the broker's Redis for the counters, per process (redis-py's pool starts
    again in a forked worker). Its own short timeouts, not Celery's, and one immediate retry
    (a pooled connection that Redis closed while idle)."""
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                  retry=Retry(NoBackoff(), 1))
    return client, client.register_script(_CHECK)


def _redis_check(store: tuple[Any, Any], keys: list[str], limits: Sequence[Limit], *,
                 count: bool) -> tuple[float, int | None]:
    _, script = store
    args: list[int] = [1 if count else 0]
    for limit in limits:
        args += [limit.calls, limit.period * 1000]
    try:
        wait_ms, worst = script(keys=[REDIS_PREFIX + key for key in keys], args=args)
    except (redis.RedisError, OSError) as exc:
        # The class only: the broker's URL may hold its password.
        logger.warning("the call limits' Redis is unavailable: %s", type(exc).__name__)
        raise LimiterUnavailable() from exc
    return (int(wait_ms) / 1000, int(worst) - 1) if int(worst) else (0.0, None)


# --- The database ----------------------------------------------------------------------------

@functools.cache
def _hit_sql(vendor: str) -> str:
    """Count one call in a counter: a new row, the next call of the window, or the first of a
    new window; answers the count. Written once per vendor (SQLite and PostgreSQL share it)."""
    name = table(RateWindow)
    key, start, hits, expires = (column(RateWindow, field) for field in ("key", "window_start", "hits", "expires_at"))
    return (f"INSERT INTO {name} ({key}, {start}, {hits}, {expires}) VALUES (%s, %s, 1, %s) "  # noqa: S608
            f"ON CONFLICT ({key}) DO UPDATE SET "
            f"{hits} = CASE WHEN {name}.{start} = excluded.{start} THEN {name}.{hits} + 1 ELSE 1 END, "
            f"{start} = excluded.{start}, {expires} = excluded.{expires} RETURNING {hits}")


def _database_check(keys: list[str], limits: Sequence[Limit], *, count: bool) -> tuple[float, int | None]:
    now = clock()
    starts = [int(now // limit.period) * limit.period for limit in limits]
    if not count:
        stored = _stored(keys)
        hits = [stored.get(key, {}).get(start, 0) + 1 for key, start in zip(keys, starts, strict=True)]
        return _worst(now, hits, starts, limits)
    sql = _hit_sql(connection.vendor)
    with transaction.atomic():
        with connection.cursor() as cursor:
            hits = []
            for key, start, limit in zip(keys, starts, limits, strict=True):
                ends = datetime.fromtimestamp(start + limit.period, tz=UTC)
                cursor.execute(sql, [key, start, connection.ops.adapt_datetimefield_value(ends)])
                hits.append(int(cursor.fetchone()[0]))
        wait, worst = _worst(now, hits, starts, limits)
        if worst is not None:
            transaction.set_rollback(True)  # a refused call counts against no limit
    return wait, worst


def _stored(keys: list[str]) -> Mapping[str, Mapping[int, int]]:
    rows = RateWindow.objects.filter(key__in=keys).values_list("key", "window_start", "hits")
    return {key: {start: hits} for key, start, hits in rows}


def _worst(now: float, hits: Sequence[int], starts: Sequence[int],
           limits: Sequence[Limit]) -> tuple[float, int | None]:
    """With ``hits`` counting this call: the longest wait among the limits it would pass."""
    wait, worst = 0.0, None
    for index, (count, start, limit) in enumerate(zip(hits, starts, limits, strict=True)):
        left = start + limit.period - now
        if count > limit.calls and left > wait:
            wait, worst = left, index
    return wait, worst


def rate_windows_purge(*, batch_size: int = 1000) -> int:
    """Forget the database's counters whose window has ended. Returns how many."""
    return delete_in_batches(RateWindow.objects.filter(expires_at__lt=timezone.now()), batch_size)
