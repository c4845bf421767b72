"""The group-side Ports, implemented over the group selectors and services."""
from __future__ import annotations

from typing import Sequence

from arkme.accounts.models import AccountKey

from .selectors import (
    AddMembersView,
    AddResultView,
    CandidatesView,
    GroupRefView,
    group_for_source_ref,
    group_refs_view,
    group_view,
)
from .services import describe_members_add, group_member_candidates, group_members_add, members_add_names


class GroupAdapter:
    def groups_with_source_refs(self, *, account: AccountKey) -> list[GroupRefView]:
        return group_refs_view(account)


class GroupMemberAdapter:
    def candidates(self, *, account: AccountKey, source_ref: str, query: str | None, limit: int) -> CandidatesView:
        found = group_member_candidates(account=account, source_ref=source_ref, query=query, limit=limit)
        return {
            "group": group_view(found.group),
            "candidates": found.candidates,
            "truncated": found.truncated,
            "scope": found.scope,
        }

    def add_members(self, *, account: AccountKey, source_ref: str, candidate_refs: Sequence[str]) -> AddMembersView:
        added = group_members_add(account=account, source_ref=source_ref, candidate_refs=candidate_refs)
        results: list[AddResultView] = []
        for judged in added.results:
            result: AddResultView = {"candidate_ref": judged.ref, "outcome": judged.outcome}
            if judged.person is not None:
                result["display_name"] = judged.person.display_name
            results.append(result)
        return {"group": group_view(added.group, fresh=True), "results": results}

    def describe_add(self, *, account: AccountKey, source_ref: str, candidate_refs: Sequence[str]) -> tuple[str, str]:
        return describe_members_add(account=account, source_ref=source_ref, candidate_refs=candidate_refs)

    def names_to_add(self, *, account: AccountKey, source_ref: str, candidate_refs: Sequence[str]) -> list[str]:
        return members_add_names(account=account, source_ref=source_ref, candidate_refs=candidate_refs)

    def group_of(self, *, account: AccountKey, source_ref: str) -> str:
        return group_for_source_ref(account, source_ref).public_id
