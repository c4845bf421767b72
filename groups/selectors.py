"""Reads of the group domain."""
from __future__ import annotations

from django.db.models import Case, Exists, F, OuterRef, Q, QuerySet, When

from arkme.errors import Forbidden, InvalidArguments, NotFound
from arkme.models import Account

from .models import Group, Membership, PrivateChat
from .refs import RefExpired, RefInvalid, read_source_ref


def groups_of(account: Account) -> QuerySet[Group]:
    return Group.objects.filter(memberships__account=account).order_by("id").distinct()


def group_view(group: Group) -> dict:
    return {"name": group.name, "join_policy": group.join_policy, "member_count": group.memberships.count()}


def group_for_source_ref(account: Account, source_ref: object) -> Group:
    """Fetch-and-authorise: the group a source ref names, for a current member only."""
    try:
        group_id = read_source_ref(source_ref, account_public_id=account.public_id)
    except RefExpired as exc:
        raise InvalidArguments("The source_ref has expired; call arkme_context again.", code="expired_source_ref",
                               fields=["source_ref"]) from exc
    except RefInvalid as exc:
        raise InvalidArguments("The source_ref is not valid.", code="invalid_source_ref", fields=["source_ref"]) from exc
    group = Group.objects.filter(public_id=group_id).first()
    if group is None:
        raise NotFound("No such group.", code="unknown_group")
    if not Membership.objects.filter(group=group, account=account).exists():
        raise Forbidden("You are no longer a member of this group.", code="not_a_member")
    return group


def chats_of(account: Account) -> QuerySet[PrivateChat]:
    return PrivateChat.objects.filter(Q(account_low=account) | Q(account_high=account))


def candidate_chats(account: Account, group: Group, *, query: str | None, limit: int) -> list[dict]:
    """People from the account's private chats who could join the group, newest chat first.

    One query: the other side of each chat is picked with CASE, and membership is a
    NOT EXISTS, so the cost grows with the rows returned, not with chats or members.
    """
    def other(field: str):
        return Case(When(account_low=account, then=F(f"account_high__{field}")), default=F(f"account_low__{field}"))

    rows = (
        chats_of(account)
        .annotate(other_id=other("id"), other_name=other("display_name"), other_active=other("is_active"))
        .filter(other_active=True)
        .exclude(Exists(Membership.objects.filter(group=group, account_id=OuterRef("other_id"))))
    )
    if query:
        rows = rows.filter(other_name__icontains=query)
    return list(rows.order_by("-last_activity_at", "-id").values("public_id", "other_name")[: limit + 1])
