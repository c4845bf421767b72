"""Reads of the group domain, and the one place each group result is projected."""
from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Annotated, Any, NotRequired, Sequence, TypedDict

from django.conf import settings
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q, QuerySet
from msgspec import Meta

from arkme.accounts.models import Account, AccountIdentity
from arkme.kernel.errors import ErrorCode, Forbidden, InvalidArguments, NotFound
from arkme.kernel.projections import NonNegative, one_of
from arkme.kernel.signing import RefExpired, RefInvalid
from arkme.kernel.sql import column, execute_custom_plan, from_row, hot_cursor, table

from .models import ChatPartner, Group, Invitation, InvitationStatus, JoinPolicy, Membership, PrivateChat
from .refs import read_source_ref, source_ref_maker
from .vocabulary import ANSWERED_OUTCOMES, Scope


class GroupView(TypedDict):
    name: str
    join_policy: Annotated[str, one_of(*JoinPolicy.values)]
    member_count: NonNegative


class GroupRefView(TypedDict):
    name: str
    source_ref: str


class CandidateView(TypedDict):
    candidate_ref: str
    display_name: str


class CandidatesView(TypedDict):
    group: GroupView
    candidates: list[CandidateView]
    truncated: bool
    # An addition to the contract, which names group, candidates and truncated.
    scope: Annotated[str, one_of(*Scope), Meta(
        description="Which chats were searched: the recent ones (no query) or all of them (a query).")]


class AddResultView(TypedDict):
    candidate_ref: str
    display_name: NotRequired[str]
    outcome: Annotated[str, one_of(*ANSWERED_OUTCOMES)]


class AddMembersView(TypedDict):
    group: GroupView
    results: list[AddResultView]


def groups_of(account: AccountIdentity) -> QuerySet[Group]:
    return Group.objects.filter(memberships__account_id=account.pk).order_by("id").distinct()


@functools.cache
def _group_refs_sql(vendor: str) -> str:
    """The account's groups, oldest first, as SQL written once per database vendor
    (``arkme_context`` reads it on every call)."""
    g, m = table(Group), table(Membership)
    return (f"SELECT {column(Group, 'name')}, {column(Group, 'public_id')} FROM {g}"  # noqa: S608
            f" WHERE {column(Group, 'id')} IN (SELECT {column(Membership, 'group')} FROM {m}"
            f" WHERE {column(Membership, 'account')} = %s) ORDER BY {column(Group, 'id')}")


def group_refs_view(account: AccountIdentity) -> list[GroupRefView]:
    with hot_cursor() as cursor:
        cursor.execute(_group_refs_sql(cursor.db.vendor), [account.pk])
        rows = cursor.fetchall()
    sign = source_ref_maker(account_public_id=account.public_id)
    return [{"name": name, "source_ref": sign(public_id)} for name, public_id in rows]


def group_view(group: Group, *, fresh: bool = False) -> GroupView:
    """``fresh`` reads the size again, after this call changed the memberships (the database
    keeps the column, so the loaded group's copy is stale)."""
    count = group.member_count
    if fresh:
        count = Group.objects.filter(pk=group.pk).values_list("member_count", flat=True).get()
    return {"name": group.name, "join_policy": group.join_policy, "member_count": count}


_table, _column = table, column


_GROUP_FIELDS = tuple(f.attname for f in Group._meta.concrete_fields)
_IS_MEMBER = len(_GROUP_FIELDS)  # the column after the group's in _group_for_member_sql


@functools.cache
def _group_for_member_sql(vendor: str) -> str:
    """The group (its size is a column) and whether the account belongs to it, in one statement.

    Written once as SQL, for the reason given on ``_candidates_sql``, which reads it as its CTE.
    """
    group_pk, group_fk, account_fk = _column(Group, "id"), _column(Membership, "group"), _column(Membership, "account")
    columns = ", ".join(f"g.{_column(Group, name)}" for name in _GROUP_FIELDS)
    return (
        f"SELECT {columns},"  # noqa: S608 - identifiers from the models, values bound
        f" EXISTS (SELECT 1 FROM {_table(Membership)} m WHERE m.{group_fk} = g.{group_pk} AND m.{account_fk} = %s)"
        f" AS is_member"
        f" FROM {_table(Group)} g WHERE g.{_column(Group, 'public_id')} = %s"
    )


def _group_public_id(account: AccountIdentity, source_ref: object) -> str:
    try:
        return read_source_ref(source_ref, account_public_id=account.public_id)
    except RefExpired as exc:
        raise InvalidArguments("The source_ref has expired; call arkme_context again.", code=ErrorCode.EXPIRED_SOURCE_REF,
                               fields=["source_ref"]) from exc
    except RefInvalid as exc:
        raise InvalidArguments("The source_ref is not valid.", code=ErrorCode.INVALID_SOURCE_REF, fields=["source_ref"]) from exc


def _member_group(row: Sequence[Any] | None, db: BaseDatabaseWrapper) -> Group:
    """The group from a row of ``_group_for_member_sql``'s columns, for a current member only."""
    if row is None:
        raise NotFound("No such group.", code=ErrorCode.UNKNOWN_GROUP)
    if not row[_IS_MEMBER]:
        raise Forbidden("You are no longer a member of this group.", code=ErrorCode.NOT_A_MEMBER)
    return from_row(Group, _GROUP_FIELDS, row[:_IS_MEMBER], db)


def group_for_source_ref(account: AccountIdentity, source_ref: object) -> Group:
    """Fetch-and-authorise: the group a source ref names, for a current member only."""
    group_id = _group_public_id(account, source_ref)
    with hot_cursor() as cursor:
        cursor.execute(_group_for_member_sql(cursor.db.vendor), [account.pk, group_id])
        return _member_group(cursor.fetchone(), cursor.db)


def chats_of(account: AccountIdentity) -> QuerySet[PrivateChat]:
    return PrivateChat.objects.filter(Q(account_low_id=account.pk) | Q(account_high_id=account.pk))


def _candidates_of_sql(*, recent: bool, with_query: bool, group: str) -> str:
    """The account's chat partners who are active and not members of ``group``, newest chat
    first, cut at a limit; from its ``ChatPartner`` rows, one index read newest first.

    ``recent`` reads at most the newest ``ARKME_CANDIDATE_RECENT_CHATS`` chats (a window read
    from the index, then filtered): the unqueried list, whose cost must not grow with the
    history even when every recent partner is already a member. Without it every chat is
    searched, for a query: on PostgreSQL the planner can then start from the accounts whose
    names match (a trigram index, groups.0003) and probe ``(person, partner)`` for each, or
    read the chats newest first when the name is common, whichever its estimate makes cheaper.
    """
    name, account_pk = _column(Account, "display_name"), _column(Account, "id")
    chat_id, activity = _column(ChatPartner, "chat"), _column(ChatPartner, "last_activity_at")
    person, partner = _column(ChatPartner, "person"), _column(ChatPartner, "partner")
    chat_public_id = _column(ChatPartner, "chat_public_id")
    match = f" AND UPPER(a.{name}) LIKE UPPER(%s) ESCAPE '\\'" if with_query else ""
    if recent:
        source = (
            f"(SELECT {chat_public_id}, {partner}, {activity}, {chat_id} FROM {_table(ChatPartner)}"  # noqa: S608
            f" WHERE {person} = %s ORDER BY {activity} DESC, {chat_id} DESC LIMIT %s) AS p")
        mine = ""
    else:
        source = f"{_table(ChatPartner)} p"
        mine = f" AND p.{person} = %s"
    return (
        f"SELECT p.{chat_public_id} AS chat_public_id, a.{name} AS other_name,"  # noqa: S608 - identifiers
        f" p.{activity} AS last_activity_at, p.{chat_id} AS chat_id"
        f" FROM {source} JOIN {_table(Account)} a ON a.{account_pk} = p.{partner}"
        f" WHERE a.{_column(Account, 'is_active')} = %s{mine}"
        f" AND NOT EXISTS (SELECT 1 FROM {_table(Membership)} m WHERE m.{_column(Membership, 'group')} = {group}"
        f" AND m.{_column(Membership, 'account')} = p.{partner} LIMIT 1 OFFSET 0){match}"
        f" ORDER BY p.{activity} DESC, p.{chat_id} DESC LIMIT %s"
    )


@functools.cache
def _candidates_sql(vendor: str, with_query: bool) -> str:
    """The group a source ref names, whether the caller belongs to it, and the candidates,
    in one statement built once per database vendor from the models' table names.

    The first row is the group's, from ``_group_for_member_sql`` (a CTE), with no candidate
    columns; the candidates follow, each with no group columns (repeated on every row, the
    driver would parse them fifty times), and only when the caller is a member. No row is
    no such group. One statement instead of two saves a round trip a call and the
    database's work on a second statement (docs/PERFORMANCE.md).

    The candidates come from the caller's side of each chat (``ChatPartner``): without a
    query, from the newest ``ARKME_CANDIDATE_RECENT_CHATS`` chats, so the cost grows with the
    rows returned and never beyond the window, whatever the history and however many recent
    partners are already members; with a query, from every chat (``_candidates_of_sql``).
    Membership is a NOT EXISTS on its unique index, probed for each partner read: its
    ``OFFSET 0`` keeps PostgreSQL from turning it into an anti-join, which hashed all of a
    large group's memberships to check a thousand partners (27 against 9 ms for a common
    name in a group of 50,000; docs/PERFORMANCE.md).

    It is written as SQL rather than composed with the ORM on every call because composing
    and compiling the querysets cost more than running them (about 1 ms a call; see
    docs/PERFORMANCE.md). The candidates are wrapped in a derived table so that both SQLite
    and PostgreSQL accept their ORDER BY and LIMIT inside the UNION.
    """
    group = f"(SELECT {_column(Group, 'id')} FROM member_group)"  # noqa: S608 - an identifier from the model
    candidates = _candidates_of_sql(recent=not with_query, with_query=with_query, group=group)
    group_columns = ", ".join(_column(Group, name) for name in _GROUP_FIELDS)
    blanks = ", ".join(["NULL"] * (len(_GROUP_FIELDS) + 1))
    return (
        f"WITH member_group AS ({_group_for_member_sql(vendor)})"  # noqa: S608 - built above, values bound
        f" SELECT {group_columns}, is_member, chat_public_id, other_name FROM ("
        f"SELECT member_group.*, 0 AS part, NULL AS chat_public_id, NULL AS other_name, NULL AS last_activity_at,"
        " NULL AS chat_id FROM member_group"
        f" UNION ALL SELECT {blanks}, 1, c.chat_public_id, c.other_name, c.last_activity_at, c.chat_id"
        f" FROM ({candidates}) AS c WHERE (SELECT is_member FROM member_group)"
        ") AS found ORDER BY part, last_activity_at DESC, chat_id DESC"
    )


def candidates_params(account_pk: int, group_public_id: str, *, query: str | None, limit: int) -> list[Any]:
    """The parameters of ``_candidates_sql(vendor, bool(query))``, in its order."""
    if query:
        return [account_pk, group_public_id, True, account_pk, f"%{connection.ops.prep_for_like_query(query)}%",
                limit + 1]
    return [account_pk, group_public_id, account_pk, settings.ARKME_CANDIDATE_RECENT_CHATS, True, limit + 1]


def group_and_candidates(account: AccountIdentity, source_ref: object, *, query: str | None,
                         limit: int) -> tuple[Group, list[tuple[str, str]]]:
    """Fetch-and-authorise as ``group_for_source_ref`` does, and the people from the
    account's private chats who could join the group, newest first, at most ``limit + 1`` of
    them (one more tells the caller the list was cut), each as the chat's public id and the
    person's display name: with a ``query``, from every chat; without, from the newest
    ``ARKME_CANDIDATE_RECENT_CHATS``."""
    group_id = _group_public_id(account, source_ref)
    with hot_cursor() as cursor:
        sql, params = _candidates_sql(cursor.db.vendor, bool(query)), candidates_params(
            account.pk, group_id, query=query, limit=limit)
        if query:  # which way a name is found depends on the name (execute_custom_plan)
            execute_custom_plan(cursor, sql, params)
        else:
            cursor.execute(sql, params)
        rows = cursor.fetchall()
        group = _member_group(rows[0] if rows else None, cursor.db)
    found = _IS_MEMBER + 1
    return group, [(row[found], row[found + 1]) for row in rows[1:]]


# --- The staff dashboard -------------------------------------------------------------------

def invitations_outlook(now: datetime) -> list[tuple[str, int]]:
    """Pending invitations: expiring within a day, later, and past expiry but not yet swept."""
    pending = Invitation.objects.filter(status=InvitationStatus.PENDING)
    soon = now + timedelta(days=1)
    return [
        ("expiring within 24 h", pending.filter(expires_at__gt=now, expires_at__lte=soon).count()),
        ("expiring later", pending.filter(expires_at__gt=soon).count()),
        ("past expiry", pending.filter(expires_at__lte=now).count()),
    ]
