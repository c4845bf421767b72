"""A few slots per key, shared by every process that shares the store: at most ``limit``
holders of one key at once (one account's renders in flight), and a caller past it is told so
at once rather than made to wait.

Where the slots live: in Redis when the task results do (every web process and node reaches
that server already), as PostgreSQL advisory locks when the database is PostgreSQL, else in
this process (the embedded default: one process, SQLite, tasks in-process). A lease in Redis
expires on its own, so a process killed while holding one frees it after ``lease_seconds``;
an advisory lock goes with its holder's database session.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import uuid
import zlib
from collections.abc import Iterator
from typing import Any

from celery import current_app
from celery.backends.redis import RedisBackend
from django.db import connection

from .errors import QueueUnavailable

logger = logging.getLogger(__name__)

# Take a free slot if the key has one: leases past their expiry (their holder died) are
# dropped first. Redis's own clock, so nodes whose clocks differ agree on what has expired.
_ACQUIRE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"""
_LOCAL_LOCK = threading.Lock()
_local_held: dict[tuple[str, int], int] = {}


def _redis() -> Any | None:
    backend = current_app.backend
    return backend.client if isinstance(backend, RedisBackend) else None


def _redis_slot(client: Any, name: str, key: int, limit: int, lease_seconds: float) -> Iterator[bool]:
    redis_key, lease = f"arkme:slots:{name}:{key}", uuid.uuid4().hex
    try:
        held = bool(client.eval(_ACQUIRE, 1, redis_key, limit, max(1, int(lease_seconds * 1000)), lease))
    except Exception as exc:  # redis-py's connection and timeout errors: the result store is gone
        logger.warning("slots unavailable in Redis: %s", type(exc).__name__)
        raise QueueUnavailable() from exc
    try:
        yield held
    finally:
        if held:
            with contextlib.suppress(Exception):  # unreleased, the lease expires by itself
                client.zrem(redis_key, lease)


def _advisory_slot(name: str, key: int, limit: int) -> Iterator[bool]:
    # Two 32-bit keys: the name's checksum with the slot number in its low byte, and the key.
    base, objid = zlib.crc32(name.encode()) & 0x7FFFFF00, key & 0x7FFFFFFF
    taken: int | None = None
    with connection.cursor() as cursor:
        for slot in range(min(limit, 256)):
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [base | slot, objid])
            if cursor.fetchone()[0]:
                taken = base | slot
                break
    try:
        yield taken is not None
    finally:
        if taken is not None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [taken, objid])


def _local_slot(name: str, key: int, limit: int) -> Iterator[bool]:
    with _LOCAL_LOCK:
        held = _local_held.get((name, key), 0) < limit
        if held:
            _local_held[(name, key)] = _local_held.get((name, key), 0) + 1
    try:
        yield held
    finally:
        if held:
            with _LOCAL_LOCK:
                left = _local_held[(name, key)] - 1
                if left:
                    _local_held[(name, key)] = left
                else:
                    del _local_held[(name, key)]


@contextlib.contextmanager
def slot(name: str, key: int, *, limit: int, lease_seconds: float) -> Iterator[bool]:
    """Hold one of ``key``'s ``limit`` slots of kind ``name`` for the block: yields True when
    held, False when all are taken (the caller refuses). ``lease_seconds``: how long a holder
    that died keeps its slot in Redis; longer than the block can last."""
    client = _redis()
    if client is not None:
        yield from _redis_slot(client, name, key, limit, lease_seconds)
    elif connection.vendor == "postgresql":
        yield from _advisory_slot(name, key, limit)
    else:
        yield from _local_slot(name, key, limit)
