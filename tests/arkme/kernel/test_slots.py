"""Slots per key: in-process, PostgreSQL advisory locks, and Redis leases that expire."""
from __future__ import annotations

import threading
import time

import pytest
import redis
from django.db import connection

from arkme.kernel import slots
from config.celery import app
from tests.support.live import listening
from tests.support.services import require_service
from tests.support.stack import redis_db


def _hold_in_thread(name: str, key: int, limit: int) -> tuple[threading.Event, threading.Thread, list[bool]]:
    """A holder in a thread of its own (its own database session); set the event to release."""
    done, took, held = threading.Event(), threading.Event(), []

    def run() -> None:
        try:
            with slots.slot(name, key, limit=limit, lease_seconds=30) as got:
                held.append(got)
                took.set()
                done.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert took.wait(10)
    return done, thread, held


@pytest.mark.django_db(transaction=True)
def test_a_key_holds_at_most_its_limit_and_a_release_frees_one():
    # In-process on SQLite; advisory locks on PostgreSQL (each thread its own session).
    holders = [_hold_in_thread("test", 7, 2) for _ in range(2)]
    assert [held for _, _, held in holders] == [[True], [True]]
    with slots.slot("test", 7, limit=2, lease_seconds=30) as held:
        assert not held
    with slots.slot("test", 8, limit=2, lease_seconds=30) as held:  # another key is not affected
        assert held
    done, thread, _ = holders[0]
    done.set()
    thread.join(10)
    with slots.slot("test", 7, limit=2, lease_seconds=30) as held:
        assert held
    holders[1][0].set()
    holders[1][1].join(10)


@pytest.fixture
def redis_results():
    require_service("Redis", listening(6379), "redis-server on 127.0.0.1:6379")
    url = f"redis://127.0.0.1:6379/{redis_db()}"
    previous = app.conf.result_backend
    app.conf.result_backend = url
    app._local.__dict__.pop("backend", None)
    yield redis.Redis.from_url(url)
    app.conf.result_backend = previous
    app._local.__dict__.pop("backend", None)


def test_redis_leases_are_shared_and_a_dead_holders_expires(redis_results):
    redis_results.delete("arkme:slots:test:9")
    first = slots.slot("test", 9, limit=2, lease_seconds=0.5)
    assert first.__enter__()  # a holder that dies: never released
    with slots.slot("test", 9, limit=2, lease_seconds=30) as held:
        assert held
        with slots.slot("test", 9, limit=2, lease_seconds=30) as over:
            assert not over
    # released: one free again; and the dead holder's lease runs out by itself
    time.sleep(0.7)
    with slots.slot("test", 9, limit=2, lease_seconds=30) as one, slots.slot("test", 9, limit=2, lease_seconds=30) as two:
        assert one and two
    assert redis_results.zcard("arkme:slots:test:9") == 0
