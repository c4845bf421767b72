"""Deleting and reordering gallery items: pre-execute approved, revision-checked."""
from __future__ import annotations

from typing import Any, Sequence

from django.db import transaction
from django.db.models import F

from arkme.errors import Conflict, InvalidArguments, NotFound
from arkme.models import Account

from .models import Gallery, GalleryHistory, GalleryItem
from .selectors import extension_for_owner, gallery_view

# Positions move out of the way first, so (gallery, position) stays unique after every statement.
POSITION_SHIFT = 1_000_000


def _locked_gallery(account: Account, extension: str, revision: int) -> Gallery:
    target = extension_for_owner(account, extension)
    gallery = Gallery.objects.select_for_update().select_related("extension").get(extension=target)
    if gallery.revision != revision:
        raise Conflict("The gallery changed since that revision; read it again.", code="revision_conflict",
                       details={"revision": gallery.revision})
    return gallery


def _unknown_items(current: dict[str, GalleryItem], wanted: Sequence[str], name: str) -> None:
    unknown = [f"{name}[{i}]" for i, item in enumerate(wanted) if item not in current]
    if unknown:
        raise NotFound("No such item in this gallery.", code="unknown_item", details={"fields": unknown})


def _renumber(gallery: Gallery, ordered: list[GalleryItem]) -> None:
    GalleryItem.objects.filter(gallery=gallery).update(position=F("position") + POSITION_SHIFT)
    for position, item in enumerate(ordered, start=1):
        item.position = position
    GalleryItem.objects.bulk_update(ordered, ["position"])


def _bump(gallery: Gallery, action: str, items: list[str]) -> None:
    gallery.revision += 1
    gallery.save(update_fields=["revision", "updated_at"])
    GalleryHistory.objects.create(gallery=gallery, revision=gallery.revision, action=action, items=items)


def gallery_delete_items(*, account: Account, extension: str, items: Sequence[str], revision: int) -> dict[str, Any]:
    with transaction.atomic():
        gallery = _locked_gallery(account, extension, revision)
        current = {item.public_id: item for item in gallery.items.order_by("position")}
        _unknown_items(current, items, "items")
        doomed = set(items)
        GalleryItem.objects.filter(gallery=gallery, public_id__in=doomed).delete()
        _renumber(gallery, [item for key, item in current.items() if key not in doomed])
        _bump(gallery, GalleryHistory.Action.DELETE, list(items))
    # Blobs no longer referenced are removed by garbage collection, after a grace period.
    return {"gallery": gallery_view(gallery)}


def gallery_reorder_items(*, account: Account, extension: str, order: Sequence[str], revision: int) -> dict[str, Any]:
    with transaction.atomic():
        gallery = _locked_gallery(account, extension, revision)
        current = {item.public_id: item for item in gallery.items.order_by("position")}
        _unknown_items(current, order, "order")
        if len(order) != len(current) or set(order) != set(current):
            raise InvalidArguments("order must name every current item exactly once.", code="invalid_order", fields=["order"])
        _renumber(gallery, [current[key] for key in order])
        _bump(gallery, GalleryHistory.Action.REORDER, list(order))
    return {"gallery": gallery_view(gallery)}


def _positions(account: Account, extension: str, wanted: Sequence[str], name: str):
    target = extension_for_owner(account, extension)
    current = {item.public_id: item.position for item in target.gallery.items.all()}
    _unknown_items(current, wanted, name)
    return target, current


def describe_delete(*, account: Account, extension: str, items: Sequence[str]) -> tuple[str, str]:
    target, current = _positions(account, extension, items, "items")
    positions = ", ".join(str(current[item]) for item in sorted(items, key=current.get))
    noun = "image" if len(items) == 1 else "images"
    return (
        f"Delete {len(items)} {noun} from “{target.name}”?",
        f"The {noun} at position {positions} will be removed from the preview gallery of “{target.name}”, "
        f"leaving {len(current) - len(items)}.",
    )


def describe_reorder(*, account: Account, extension: str, order: Sequence[str]) -> tuple[str, str]:
    target, current = _positions(account, extension, order, "order")
    sequence = ", ".join(str(current[item]) for item in order)
    return (
        f"Reorder the preview gallery of “{target.name}”?",
        f"The images will be shown in this order of their current positions: {sequence}.",
    )
