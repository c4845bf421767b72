"""Deleting and reordering gallery items: pre-execute approved, revision-checked."""
from __future__ import annotations

from typing import Mapping, Sequence

from django.db import transaction
from django.db.models import F

from arkme.accounts.models import AccountIdentity
from arkme.kernel.cancellation import cancellation_check
from arkme.kernel.errors import Conflict, ErrorCode, InvalidArguments, NotFound

from ..models import Extension, Gallery, GalleryHistory, GalleryItem
from ..selectors import extension_for_owner

# Positions move out of the way first, so (gallery, position) stays unique after every statement.
POSITION_SHIFT = 1_000_000


def _locked_gallery(account: AccountIdentity, extension: str, revision: int) -> Gallery:
    target = extension_for_owner(account, extension)
    gallery = Gallery.objects.select_for_update().select_related("extension").get(extension=target)
    if gallery.revision != revision:
        raise Conflict("The gallery changed since that revision; read it again.", code=ErrorCode.REVISION_CONFLICT,
                       details={"revision": gallery.revision})
    return gallery


def _locked_items(account: AccountIdentity, extension: str, revision: int, wanted: Sequence[str],
                  name: str) -> tuple[Gallery, dict[str, GalleryItem]]:
    """The locked gallery at ``revision`` and its items by id, every wanted one among them."""
    gallery = _locked_gallery(account, extension, revision)
    current = {item.public_id: item for item in gallery.items.order_by("position")}
    _unknown_items(current, wanted, name)
    return gallery, current


def _unknown_items(current: Mapping[str, object], wanted: Sequence[str], name: str) -> None:
    unknown = [f"{name}[{i}]" for i, item in enumerate(wanted) if item not in current]
    if unknown:
        raise NotFound("No such item in this gallery.", code=ErrorCode.UNKNOWN_ITEM, details={"fields": unknown})


def _renumber(gallery: Gallery, ordered: list[GalleryItem]) -> None:
    GalleryItem.objects.filter(gallery=gallery).update(position=F("position") + POSITION_SHIFT)
    for position, item in enumerate(ordered, start=1):
        item.position = position
    GalleryItem.objects.bulk_update(ordered, ["position"])


def _bump(gallery: Gallery, action: str, items: list[str]) -> None:
    gallery.revision += 1
    gallery.save(update_fields=["revision", "updated_at"])
    GalleryHistory.objects.create(gallery=gallery, revision=gallery.revision, action=action, items=items)


def gallery_delete_items(*, account: AccountIdentity, extension: str, items: Sequence[str],
                         revision: int) -> Gallery:
    # Not durable: it runs inside the transaction that uses the human's approval.
    with transaction.atomic():
        gallery, current = _locked_items(account, extension, revision, items, "items")
        doomed = set(items)
        GalleryItem.objects.filter(gallery=gallery, public_id__in=doomed).delete()
        _renumber(gallery, [item for key, item in current.items() if key not in doomed])
        _bump(gallery, GalleryHistory.Action.DELETE, list(items))
        cancellation_check()  # the last step before the commit: nothing for a caller that left
    # Blobs no longer referenced are removed by garbage collection, after a grace period.
    return gallery


def gallery_reorder_items(*, account: AccountIdentity, extension: str, order: Sequence[str],
                          revision: int) -> Gallery:
    # Not durable: it runs inside the transaction that uses the human's approval.
    with transaction.atomic():
        gallery, current = _locked_items(account, extension, revision, order, "order")
        if len(order) != len(current) or set(order) != set(current):
            raise InvalidArguments("order must name every current item exactly once.", code=ErrorCode.INVALID_ORDER, fields=["order"])
        _renumber(gallery, [current[key] for key in order])
        _bump(gallery, GalleryHistory.Action.REORDER, list(order))
        cancellation_check()  # the last step before the commit: nothing for a caller that left
    return gallery


def _positions(account: AccountIdentity, extension: str, wanted: Sequence[str],
               name: str) -> tuple[Extension, dict[str, int]]:
    target = extension_for_owner(account, extension)
    current = dict(target.gallery.items.values_list("public_id", "position"))
    _unknown_items(current, wanted, name)
    return target, current


def describe_delete(*, account: AccountIdentity, extension: str, items: Sequence[str]) -> tuple[str, str]:
    target, current = _positions(account, extension, items, "items")
    positions = ", ".join(str(current[item]) for item in sorted(items, key=current.__getitem__))
    noun = "image" if len(items) == 1 else "images"
    return (
        f"Delete {len(items)} {noun} from “{target.name}”?",
        f"The {noun} at position {positions} will be removed from the preview gallery of “{target.name}”, "
        f"leaving {len(current) - len(items)}.",
    )


def describe_reorder(*, account: AccountIdentity, extension: str, order: Sequence[str]) -> tuple[str, str]:
    target, current = _positions(account, extension, order, "order")
    sequence = ", ".join(str(current[item]) for item in order)
    return (
        f"Reorder the preview gallery of “{target.name}”?",
        f"The images will be shown in this order of their current positions: {sequence}.",
    )
