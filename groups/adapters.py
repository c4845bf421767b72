"""The group-side Ports, implemented over the group selectors and services."""
from __future__ import annotations

from typing import Any, Sequence

from arkme.models import Account, AccountKey

from .refs import make_source_ref
from .selectors import groups_of
from .services import describe_members_add, group_member_candidates, group_members_add


def _account(account_pk: int) -> Account:
    return Account.objects.get(pk=account_pk)


class GroupAdapter:
    def groups_with_source_refs(self, *, account_pk: int) -> list[dict[str, Any]]:
        account = _account(account_pk)
        return [
            {"name": group.name, "source_ref": make_source_ref(
                account_public_id=account.public_id, group_public_id=group.public_id)}
            for group in groups_of(account)
        ]


class GroupMemberAdapter:
    def candidates(self, *, account_pk: int, account_public_id: str, source_ref: str, query: str | None,
                   limit: int) -> dict[str, Any]:
        # A read needs only the account's keys, which the session look-up already checked.
        return group_member_candidates(account=AccountKey(account_pk, account_public_id), source_ref=source_ref,
                                       query=query, limit=limit)

    def add_members(self, *, account_pk: int, source_ref: str, candidate_refs: Sequence[str]) -> dict[str, Any]:
        return group_members_add(account=_account(account_pk), source_ref=source_ref, candidate_refs=candidate_refs)

    def describe_add(self, *, account_pk: int, source_ref: str, candidate_refs: Sequence[str]) -> tuple[str, str]:
        return describe_members_add(account=_account(account_pk), source_ref=source_ref, candidate_refs=candidate_refs)
