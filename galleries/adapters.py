"""The gallery-side Ports, implemented over the gallery selectors and services.

Each method receives the keys the session look-up already checked and projects what the
service returns through the selectors; nothing here re-reads the account or the session.
"""
from __future__ import annotations

from typing import Sequence

from arkme.accounts.models import AccountKey
from arkme.conversations.models import SessionKey
from arkme.kernel.errors import ErrorCode, NotFound

from .blobs.services import blob_thumbnail
from .selectors import (
    ConfirmView,
    ExtensionView,
    GalleryResult,
    PrepareView,
    SourceArguments,
    extension_views,
    gallery_view,
    item_blob_sha,
    item_order,
    operation_view,
)
from .services.gallery_add import (
    gallery_add_awaiting_confirmation,
    gallery_add_record_reply,
    gallery_cancel_add,
    gallery_confirm_add,
    gallery_prepare_add,
)
from .services.gallery_edit import describe_delete, describe_reorder, gallery_delete_items, gallery_reorder_items


class ExtensionAdapter:
    def extensions_with_galleries(self, *, account: AccountKey) -> list[ExtensionView]:
        return extension_views(account)


class GalleryAdapter:
    def prepare_add(self, *, account: AccountKey, session: SessionKey, extension: str,
                    source: SourceArguments) -> PrepareView:
        return operation_view(gallery_prepare_add(account=account, session=session, extension=extension,
                                                  source=source))

    def confirm_add(self, *, account: AccountKey, session: SessionKey, extension: str,
                    operation: str) -> ConfirmView:
        done = gallery_confirm_add(account=account, session=session, extension=extension, operation=operation)
        return {"gallery": gallery_view(done.gallery), "added": done.added, "already_present": done.already_present}

    def awaiting_confirmation(self, *, account: AccountKey, session: SessionKey, extension: str,
                              operation: str) -> str | None:
        waiting = gallery_add_awaiting_confirmation(account=account, session=session, extension=extension,
                                                    operation=operation)
        return None if waiting is None else operation_view(waiting)["question"]

    def record_reply(self, *, account: AccountKey, session: SessionKey, extension: str, operation: str,
                     text: str) -> None:
        gallery_add_record_reply(account=account, session=session, extension=extension, operation=operation,
                                 text=text)

    def cancel_add(self, *, account: AccountKey, session: SessionKey, extension: str,
                   operation: str) -> GalleryResult:
        gallery = gallery_cancel_add(account=account, session=session, extension=extension, operation=operation)
        return {"gallery": gallery_view(gallery)}

    def delete_items(self, *, account: AccountKey, extension: str, items: Sequence[str],
                     revision: int) -> GalleryResult:
        gallery = gallery_delete_items(account=account, extension=extension, items=items, revision=revision)
        return {"gallery": gallery_view(gallery)}

    def reorder_items(self, *, account: AccountKey, extension: str, order: Sequence[str],
                      revision: int) -> GalleryResult:
        gallery = gallery_reorder_items(account=account, extension=extension, order=order, revision=revision)
        return {"gallery": gallery_view(gallery)}

    def describe_delete(self, *, account: AccountKey, extension: str, items: Sequence[str]) -> tuple[str, str]:
        return describe_delete(account=account, extension=extension, items=items)

    def describe_reorder(self, *, account: AccountKey, extension: str, order: Sequence[str]) -> tuple[str, str]:
        return describe_reorder(account=account, extension=extension, order=order)

    def item_order(self, *, account: AccountKey, extension: str) -> list[str]:
        return item_order(account, extension)

    def item_thumbnail(self, *, account: AccountKey, extension: str, item: str) -> bytes:
        try:
            return blob_thumbnail(item_blob_sha(account, extension, item))
        except FileNotFoundError:  # garbage-collected since: the item is gone
            raise NotFound("No such item in this gallery.", code=ErrorCode.UNKNOWN_ITEM) from None
