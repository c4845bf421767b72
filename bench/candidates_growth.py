"""Candidate discovery as a person's chat history grows, on PostgreSQL.

The grid: how many of the recent chat partners are already members (0, 50, 90, 100 %) × no
query, a query matching one person in ten, a query matching nobody, a query matching one
partner only, the oldest (a query searches every chat, so it must find them through an
index, not by reading the history) × a group of 50 and of
50,000 members × 1k, 10k and 100k private chats, half on each side of the stored pair. Each
cell is the time of the whole service call (the group with its size, the candidate query,
signing the refs) at 10× the chats against itself at the smaller size, measured in
alternating rounds; the worst cell is the figure. Queries per call are counted too.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .common import Result, paired_medians

SIZES = (1_000, 10_000, 100_000)
DENSITIES = (0, 50, 90, 100)
QUERIES = (("none", None), ("matching", "kim"), ("nobody", "zzz"), ("the oldest partner", "quill"))
# The oldest partner of each scene is called Quill: one account a scene, never a member.
OLDEST = "Quill"
GROUP_SIZES = (50, 50_000)
# The chats a density applies to: the newest ones, as many as the window the product reads
# without a query (ARKME_CANDIDATE_RECENT_CHATS' default), and no more than the smallest size,
# so that a density makes the same members at every size and a cell's two scenes differ in
# their chats alone. (At 2,000 the 10k scene held twice the 1k scene's members, and a query
# passing every member before its first match read twice the rows for that, not for the chats.)
RECENT = 1_000
BATCH = 5_000


@dataclass
class Scene:
    account: object
    refs: dict[tuple[int, int], str]  # (density, group size) → source_ref


def _people(prefix: str, count: int, start: int = 0) -> list:
    from arkme.accounts.models import Account

    # One person in ten is called Kim, so "kim" matches a tenth of any stretch of chats.
    return Account.objects.bulk_create(
        [Account(display_name=f"{'Kim' if i % 10 == 3 else 'Lee'} {prefix}{i}", arkme_id=f"{prefix}{i:07d}")
         for i in range(start, start + count)], batch_size=BATCH)


def _is_member(index: int, density: int) -> bool:
    """Members spread evenly over the recent chats: ``density`` in every hundred."""
    return (index * density) // 100 != ((index + 1) * density) // 100


def scene(chats: int, filler: list) -> Scene:
    from django.utils import timezone

    from arkme.accounts.models import Account
    from groups.models import Group, Membership, PrivateChat
    from groups.refs import make_source_ref

    # Partners made before the account sit on the low side of the pair, the rest on the high.
    before = _people(f"b{chats}x", chats // 2)
    me = Account.objects.create(display_name=f"Me {chats}", arkme_id=f"me{chats}")
    after = _people(f"a{chats}x", chats // 2)
    # Interleaved, so the newest chats are on both sides.
    partners = [person for pair in zip(before, after, strict=True) for person in pair]
    oldest = partners[-1]
    oldest.display_name = f"{OLDEST} {chats}"
    Account.objects.filter(pk=oldest.pk).update(display_name=oldest.display_name)
    now = timezone.now()
    PrivateChat.objects.bulk_create([
        PrivateChat(account_low=min(me, p, key=lambda a: a.pk), account_high=max(me, p, key=lambda a: a.pk),
                    last_activity_at=now - timedelta(seconds=age)) for age, p in enumerate(partners)],
        batch_size=BATCH)
    refs = {}
    for density in DENSITIES:
        for size in GROUP_SIZES:
            group = Group.objects.create(name=f"g{chats}-{density}-{size}")
            members = [me] + [p for i, p in enumerate(partners[:RECENT])
                              if _is_member(i, density) and p is not oldest][: size - 1]
            members += filler[: size - len(members)]
            Membership.objects.bulk_create([Membership(group=group, account=m) for m in members], batch_size=BATCH)
            refs[(density, size)] = make_source_ref(account_public_id=me.public_id, group_public_id=group.public_id)
    return Scene(me, refs)


def run() -> Result:
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from groups.services import group_member_candidates

    if not RECENT == settings.ARKME_CANDIDATE_RECENT_CHATS <= min(SIZES):
        raise RuntimeError("the scenes' recent chats must be the product's window, at every size")
    filler = _people("f", max(GROUP_SIZES))
    scenes = {chats: scene(chats, filler) for chats in SIZES}
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")

    def call(chats: int, density: int, size: int, query: str | None):
        found = scenes[chats]
        return lambda: group_member_candidates(account=found.account, source_ref=found.refs[(density, size)],
                                               query=query, limit=50)

    cells, worst, queries = [], 0.0, 0
    for density in DENSITIES:
        for label, query in QUERIES:
            for size in GROUP_SIZES:
                for smaller, larger in zip(SIZES, SIZES[1:], strict=False):
                    t_large, t_small = paired_medians(call(larger, density, size, query),
                                                      call(smaller, density, size, query), rounds=31, warmup=5)
                    worst = max(worst, t_large / t_small)
                    cells.append({"density": density, "query": label, "group": size, "chats": larger,
                                  "ratio": round(t_large / t_small, 2), "ms": round(t_large * 1000, 2),
                                  "ms_at_a_tenth": round(t_small * 1000, 2)})
                with CaptureQueriesContext(connection) as captured:
                    call(SIZES[-1], density, size, query)()
                queries = max(queries, len(captured))
    slowest = max(cells, key=lambda cell: cell["ms"])
    worst_cell = max(cells, key=lambda cell: cell["ratio"])
    return Result("candidates_growth", round(worst, 3), "× time at 10× the chats (worst cell)",
                  "itself at a tenth of the chats",
                  "≤ 2× time at 10× in every cell, ≤ 2 queries", worst <= 2 and queries <= 2,
                  {"worst_cell": worst_cell, "slowest_cell": slowest, "queries": queries, "cells": cells})
