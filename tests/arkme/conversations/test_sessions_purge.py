"""The idle purge works in batches: any number of sessions, each batch its own transaction."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.conversations.sessions import sessions_purge
from toolregistry.idempotency import idempotency_purge
from toolregistry.models import IdempotencyRecord


def idle_sessions(dsh, account, count: int) -> None:
    long_ago = timezone.now() - timedelta(days=30)
    for start in range(0, count, 10_000):
        AgentSession.objects.bulk_create([
            AgentSession(client=dsh.client, account=account, profile="business", public_id=f"ses_idle{n}")
            for n in range(start, min(start + 10_000, count))
        ])
    AgentSession.objects.update(last_seen_at=long_ago)


def test_every_idle_session_is_closed_across_batches(dsh, world):
    idle_sessions(dsh, world.alice, 25)
    live = dsh.open_session(world.alice)["session"]
    assert sessions_purge(batch_size=10) == 25
    assert AgentSession.objects.filter(closed_at__isnull=True).get().public_id == live


def test_expired_idempotency_keys_go_in_batches(dsh, world, settings):
    session = AgentSession.objects.create(client=dsh.client, account=world.alice, profile="business")
    IdempotencyRecord.objects.bulk_create([
        IdempotencyRecord(client=dsh.client, session=session, key=f"k{n}", tool_name="t", request_digest="d")
        for n in range(25)
    ])
    IdempotencyRecord.objects.filter(key__in=["k1", "k2"]).update(created_at=timezone.now())
    IdempotencyRecord.objects.exclude(key__in=["k1", "k2"]).update(created_at=timezone.now() - timedelta(days=9))
    assert idempotency_purge(batch_size=10) == 23
    assert set(IdempotencyRecord.objects.values_list("key", flat=True)) == {"k1", "k2"}


@pytest.mark.postgres
def test_a_hundred_thousand_idle_sessions_are_purged_on_postgresql(postgres, dsh, world, figures):
    """Past 65,535 ids in one IN list PostgreSQL refuses the statement; batches never get there."""
    idle_sessions(dsh, world.alice, 100_000)
    assert sessions_purge() == 100_000
    assert not AgentSession.objects.filter(closed_at__isnull=True).exists()
    figures.record("purge_sessions_survived", 100_000)
