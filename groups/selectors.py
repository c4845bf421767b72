"""Reads of the group domain."""
from __future__ import annotations

from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from arkme.errors import Forbidden, InvalidArguments, NotFound
from arkme.models import Account

from .models import Group, Membership, PrivateChat
from .refs import RefExpired, RefInvalid, read_source_ref


def groups_of(account: Account) -> QuerySet[Group]:
    return Group.objects.filter(memberships__account=account).order_by("id").distinct()


def group_view(group: Group, *, fresh: bool = False) -> dict:
    """``fresh`` counts members again, after a change; otherwise an annotated count is used."""
    count = getattr(group, "member_count", None)
    if fresh or count is None:
        count = group.memberships.count()
    return {"name": group.name, "join_policy": group.join_policy, "member_count": count}


def group_for_source_ref(account: Account, source_ref: object) -> Group:
    """Fetch-and-authorise: the group a source ref names, for a current member only."""
    try:
        group_id = read_source_ref(source_ref, account_public_id=account.public_id)
    except RefExpired as exc:
        raise InvalidArguments("The source_ref has expired; call arkme_context again.", code="expired_source_ref",
                               fields=["source_ref"]) from exc
    except RefInvalid as exc:
        raise InvalidArguments("The source_ref is not valid.", code="invalid_source_ref", fields=["source_ref"]) from exc
    # One query: the group, whether the account belongs to it, and its size.
    group = Group.objects.filter(public_id=group_id).annotate(
        is_member=Exists(Membership.objects.filter(group=OuterRef("pk"), account=account)),
        member_count=Count("memberships"),
    ).first()
    if group is None:
        raise NotFound("No such group.", code="unknown_group")
    if not group.is_member:
        raise Forbidden("You are no longer a member of this group.", code="not_a_member")
    return group


def chats_of(account: Account) -> QuerySet[PrivateChat]:
    return PrivateChat.objects.filter(Q(account_low=account) | Q(account_high=account))


def candidate_chats(account: Account, group: Group, *, query: str | None, limit: int) -> list[dict]:
    """People from the account's private chats who could join the group, newest chat first.

    One query: a UNION ALL of the chats where the account is the lower and the higher side,
    each read newest first from its own index and cut at ``limit + 1``; membership is a
    NOT EXISTS. So the cost grows with the rows returned, not with chats or members.
    """
    def side(mine: str, theirs: str):
        rows = (
            PrivateChat.objects.filter(**{mine: account}, **{f"{theirs}__is_active": True})
            .exclude(Exists(Membership.objects.filter(group=group, account_id=OuterRef(f"{theirs}_id"))))
            .annotate(other_name=F(f"{theirs}__display_name"))
        )
        if query:
            rows = rows.filter(other_name__icontains=query)
        rows = rows.values("public_id", "other_name", "last_activity_at", "id").order_by()
        if connection.features.supports_slicing_ordering_in_compound:  # PostgreSQL; not SQLite
            rows = rows.order_by("-last_activity_at", "-id")[: limit + 1]
        return rows

    both = side("account_low", "account_high").union(side("account_high", "account_low"), all=True)
    return [
        {"public_id": row["public_id"], "other_name": row["other_name"]}
        for row in both.order_by("-last_activity_at", "-id")[: limit + 1]
    ]
