"""The gallery-side Ports, implemented over the gallery selectors and services."""
from __future__ import annotations

from typing import Any, Sequence

from arkme.models import Account
from toolregistry.models import AgentSession

from .edits import describe_delete, describe_reorder, gallery_delete_items, gallery_reorder_items
from .operations import gallery_cancel_add, gallery_confirm_add, gallery_prepare_add
from .selectors import extensions_of, gallery_view


def _account(account_pk: int) -> Account:
    return Account.objects.get(pk=account_pk)


def _session(session_pk: int) -> AgentSession:
    return AgentSession.objects.get(pk=session_pk)


class ExtensionAdapter:
    def extensions_with_galleries(self, *, account_pk: int) -> list[dict[str, Any]]:
        return [
            {"extension": ext.public_id, "name": ext.name, "gallery": gallery_view(ext.gallery)}
            for ext in extensions_of(_account(account_pk))
        ]


class GalleryAdapter:
    def prepare_add(self, *, account_pk: int, session_pk: int, extension: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return gallery_prepare_add(account=_account(account_pk), session=_session(session_pk),
                                   extension=extension, arguments=arguments)

    def confirm_add(self, *, account_pk: int, session_pk: int, extension: str, operation: str) -> dict[str, Any]:
        return gallery_confirm_add(account=_account(account_pk), session=_session(session_pk),
                                   extension=extension, operation=operation)

    def cancel_add(self, *, account_pk: int, session_pk: int, extension: str, operation: str) -> dict[str, Any]:
        return gallery_cancel_add(account=_account(account_pk), session=_session(session_pk),
                                  extension=extension, operation=operation)

    def delete_items(self, *, account_pk: int, extension: str, items: Sequence[str], revision: int) -> dict[str, Any]:
        return gallery_delete_items(account=_account(account_pk), extension=extension, items=items, revision=revision)

    def reorder_items(self, *, account_pk: int, extension: str, order: Sequence[str], revision: int) -> dict[str, Any]:
        return gallery_reorder_items(account=_account(account_pk), extension=extension, order=order, revision=revision)

    def describe_delete(self, *, account_pk: int, extension: str, items: Sequence[str]) -> tuple[str, str]:
        return describe_delete(account=_account(account_pk), extension=extension, items=items)

    def describe_reorder(self, *, account_pk: int, extension: str, order: Sequence[str]) -> tuple[str, str]:
        return describe_reorder(account=_account(account_pk), extension=extension, order=order)
