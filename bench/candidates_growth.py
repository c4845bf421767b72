"""Candidate discovery on PostgreSQL at 1k and 10k private chats (500 and 5k members): the
time at 10× the data against itself at 1k, and the queries one call takes."""
from __future__ import annotations

from datetime import timedelta

from .common import Result, paired_medians


def world(chats: int, members: int):
    from django.utils import timezone

    from arkme.accounts.models import Account
    from groups.models import Group, Membership, PrivateChat
    from groups.refs import make_source_ref

    me = Account.objects.create(display_name=f"Me {chats}")
    group = Group.objects.create(name=f"g{chats}")
    Membership.objects.create(group=group, account=me)
    people = Account.objects.bulk_create(
        [Account(display_name=f"Person {i}", arkme_id=f"p{chats}x{i:07d}") for i in range(chats)], batch_size=2000)
    now = timezone.now()
    PrivateChat.objects.bulk_create([
        PrivateChat(account_low=min(me, p, key=lambda a: a.pk), account_high=max(me, p, key=lambda a: a.pk),
                    last_activity_at=now - timedelta(seconds=i)) for i, p in enumerate(people)], batch_size=2000)
    # Members are spread over the chats, so the newest chats hold members too.
    Membership.objects.bulk_create([Membership(group=group, account=p) for p in people[::2][:members]], batch_size=2000)
    from django.db import connection
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return me, make_source_ref(account_public_id=me.public_id, group_public_id=group.public_id)


def run() -> Result:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from groups.services import group_member_candidates

    small, large = world(1_000, 500), world(10_000, 5_000)

    def call(scene):
        return lambda: group_member_candidates(account=scene[0], source_ref=scene[1], limit=50)

    # A call takes about a millisecond: many rounds, alternating, so a burst of load on the
    # machine falls on both sizes alike.
    t_large, t_small = paired_medians(call(large), call(small), rounds=101, warmup=10)
    with CaptureQueriesContext(connection) as queries:
        call(large)()
    ratio = t_large / t_small
    return Result("candidates_growth", round(ratio, 3), "× time at 1k", "itself at 1k chats and 500 members",
                  "≤ 2× time at 10×, ≤ 3 queries", ratio <= 2 and len(queries) <= 3,
                  {"ms_at_1k": round(t_small * 1000, 3), "ms_at_10k": round(t_large * 1000, 3), "queries": len(queries)})
