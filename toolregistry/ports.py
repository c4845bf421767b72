"""The narrow Ports that tool modules depend on, bound to implementations in ``arkme.composition``.

Each method takes the acting account explicitly and authorises every object it touches.
Results are JSON-ready projections.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence


class AccountPort(Protocol):
    def account_view(self, *, account_pk: int) -> dict[str, Any]: ...

    def change_arkme_id(self, *, account_pk: int, arkme_id: str) -> dict[str, Any]: ...


class ExtensionPort(Protocol):
    def extensions_with_galleries(self, *, account_pk: int) -> list[dict[str, Any]]: ...


class GroupPort(Protocol):
    def groups_with_source_refs(self, *, account_pk: int) -> list[dict[str, Any]]: ...


class GalleryPort(Protocol):
    def prepare_add(self, *, account_pk: int, session_pk: int, extension: str,
                    arguments: dict[str, Any]) -> dict[str, Any]: ...

    def confirm_add(self, *, account_pk: int, session_pk: int, extension: str, operation: str) -> dict[str, Any]: ...

    def cancel_add(self, *, account_pk: int, session_pk: int, extension: str, operation: str) -> dict[str, Any]: ...

    def delete_items(self, *, account_pk: int, extension: str, items: Sequence[str],
                     revision: int) -> dict[str, Any]: ...

    def reorder_items(self, *, account_pk: int, extension: str, order: Sequence[str],
                      revision: int) -> dict[str, Any]: ...

    def describe_delete(self, *, account_pk: int, extension: str, items: Sequence[str]) -> tuple[str, str]: ...

    def describe_reorder(self, *, account_pk: int, extension: str, order: Sequence[str]) -> tuple[str, str]: ...


class GroupMemberPort(Protocol):
    def candidates(self, *, account_pk: int, account_public_id: str, source_ref: str, query: str | None,
                   limit: int) -> dict[str, Any]: ...

    def add_members(self, *, account_pk: int, source_ref: str, candidate_refs: Sequence[str]) -> dict[str, Any]: ...

    def describe_add(self, *, account_pk: int, source_ref: str, candidate_refs: Sequence[str]) -> tuple[str, str]: ...


@dataclass(frozen=True)
class Ports:
    accounts: AccountPort
    extensions: ExtensionPort
    groups: GroupPort
    galleries: GalleryPort
    group_members: GroupMemberPort
