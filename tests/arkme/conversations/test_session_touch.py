"""A read refreshes its session at most once a minute, and on PostgreSQL that refresh is a
heap-only update: it changes no indexed column, so it writes no index entry."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.conversations.sessions import TOUCH_INTERVAL, session_for_client


def updates() -> tuple[int, int]:
    """This transaction's updates of the session table: all of them, and the heap-only ones."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_get_xact_tuples_updated(%s::regclass),"
                       " pg_stat_get_xact_tuples_hot_updated(%s::regclass)",
                       [AgentSession._meta.db_table] * 2)
        return cursor.fetchone()


def test_a_read_refreshes_a_stale_session_once(dsh, world):
    public_id = dsh.open_session(world.alice)["session"]
    stale = timezone.now() - TOUCH_INTERVAL - timedelta(seconds=1)
    AgentSession.objects.filter(public_id=public_id).update(last_seen_at=stale)
    session_for_client(dsh.client, public_id)
    seen = AgentSession.objects.get(public_id=public_id).last_seen_at
    assert seen > stale
    session_for_client(dsh.client, public_id)  # fresh now: no write
    assert AgentSession.objects.get(public_id=public_id).last_seen_at == seen


@pytest.mark.postgres
def test_the_refresh_is_a_heap_only_update_on_postgresql(postgres, dsh, world):
    public_id = dsh.open_session(world.alice)["session"]
    AgentSession.objects.filter(public_id=public_id).update(last_seen_at=timezone.now() - timedelta(minutes=5))
    before = updates()
    session_for_client(dsh.client, public_id)
    after = updates()
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)


@pytest.mark.postgres
def test_session_pages_keep_room_for_the_refreshed_row(postgres):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [AgentSession._meta.db_table])
        assert "fillfactor=80" in cursor.fetchone()[0]
