"""The narrow Ports that tool modules depend on, and the slot that holds their implementations.

Each method takes the acting account (and session) as keys the session look-up already
checked, and authorises every object it touches. Results are typed projections: each domain
declares the shape it projects to (next to its selectors), and these Protocols name them, so
the composition root's binding is checked by mypy. The composition root fills the slot at
start-up (``config.apps``); the registry never imports the root.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:  # the shapes only; no runtime dependency on the domains
    from arkme.accounts.models import AccountKey
    from arkme.accounts.selectors import AccountView
    from arkme.conversations.models import SessionKey
    from galleries.selectors import (
        ConfirmView,
        ExtensionView,
        GalleryResult,
        PrepareView,
        SourceArguments,
    )
    from groups.selectors import AddMembersView, CandidatesView, GroupRefView

CardText = tuple[str, str]
"""An approval card's title and body."""


class AccountPort(Protocol):
    def account_view(self, *, account: AccountKey) -> AccountView: ...

    def change_arkme_id(self, *, account: AccountKey, arkme_id: str) -> AccountView: ...

    def checked_arkme_id(self, *, arkme_id: str) -> str:
        """The ID as it would be stored, or ``400 invalid_arkme_id``."""
        ...


class ExtensionPort(Protocol):
    def extensions_with_galleries(self, *, account: AccountKey) -> list[ExtensionView]: ...


class GroupPort(Protocol):
    def groups_with_source_refs(self, *, account: AccountKey) -> list[GroupRefView]: ...


class GalleryPort(Protocol):
    def prepare_add(self, *, account: AccountKey, session: SessionKey, extension: str,
                    source: SourceArguments) -> PrepareView: ...

    def confirm_add(self, *, account: AccountKey, session: SessionKey, extension: str,
                    operation: str) -> ConfirmView: ...

    def awaiting_confirmation(self, *, account: AccountKey, session: SessionKey, extension: str,
                              operation: str) -> str | None:
        """The prepare's question while the add waits for the human's 确认, else None."""

    def record_reply(self, *, account: AccountKey, session: SessionKey, extension: str, operation: str,
                     text: str) -> None:
        """The human's reply to this add's question, asked them directly: it confirms this
        add alone when it is 确认 (``400 invalid_request`` for a text no message may hold)."""

    def cancel_add(self, *, account: AccountKey, session: SessionKey, extension: str,
                   operation: str) -> GalleryResult: ...

    def delete_items(self, *, account: AccountKey, extension: str, items: Sequence[str],
                     revision: int) -> GalleryResult: ...

    def reorder_items(self, *, account: AccountKey, extension: str, order: Sequence[str],
                      revision: int) -> GalleryResult: ...

    def describe_delete(self, *, account: AccountKey, extension: str, items: Sequence[str]) -> CardText: ...

    def describe_reorder(self, *, account: AccountKey, extension: str, order: Sequence[str]) -> CardText: ...

    def item_order(self, *, account: AccountKey, extension: str) -> list[str]:
        """The gallery's item ids, first to last (``404 unknown_extension`` for another's)."""
        ...

    def item_thumbnail(self, *, account: AccountKey, extension: str, item: str) -> bytes:
        """A small PNG of one of the account's gallery items (``404`` for any other)."""
        ...


class GroupMemberPort(Protocol):
    def candidates(self, *, account: AccountKey, source_ref: str, query: str | None,
                   limit: int) -> CandidatesView: ...

    def add_members(self, *, account: AccountKey, source_ref: str,
                    candidate_refs: Sequence[str]) -> AddMembersView: ...

    def describe_add(self, *, account: AccountKey, source_ref: str, candidate_refs: Sequence[str]) -> CardText: ...

    def names_to_add(self, *, account: AccountKey, source_ref: str, candidate_refs: Sequence[str]) -> list[str]:
        """The display names of the people the add would add or invite, in the call's order."""

    def group_of(self, *, account: AccountKey, source_ref: str) -> str:
        """The public id of the group a source ref names, for a current member only."""
        ...


@dataclass(frozen=True)
class Ports:
    accounts: AccountPort
    extensions: ExtensionPort
    groups: GroupPort
    galleries: GalleryPort
    group_members: GroupMemberPort


class PortsNotInstalled(RuntimeError):
    """The composition root has not bound the Ports (start-up did not run ``config.apps``)."""


_installed: Ports | None = None


def install_ports(ports: Ports) -> None:
    """Called by the composition root at start-up (tests may install fakes the same way)."""
    global _installed
    _installed = ports


def current_ports() -> Ports:
    if _installed is None:
        raise PortsNotInstalled("the composition root has not installed the tool Ports")
    return _installed

