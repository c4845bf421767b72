"""Reads of galleries, and the one place each gallery result is projected to its wire shape."""
from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, Literal, NotRequired, Sequence, TypedDict

from django.conf import settings
from django.db.models import Count, QuerySet

from arkme.accounts.models import AccountIdentity
from arkme.kernel.errors import ErrorCode, NotFound
from arkme.kernel.projections import NonNegative, Ordinal, Timestamp, one_of
from arkme.kernel.sql import column, columns, default_db, from_row, hot_cursor, table

from .models import Blob, Extension, Gallery, GalleryItem, OperationStatus, PendingOperation

ImageFormat = Annotated[str, one_of("png", "jpeg", "webp", "gif")]


class GalleryItemView(TypedDict):
    item: str
    position: Ordinal
    width: NonNegative
    height: NonNegative
    format: ImageFormat
    bytes: NonNegative


class GalleryView(TypedDict):
    extension: str
    revision: NonNegative
    capacity: NonNegative
    items: list[GalleryItemView]


class GalleryResult(TypedDict):
    gallery: GalleryView


class ExtensionView(TypedDict):
    extension: str
    name: str
    gallery: GalleryView


class PreparedImageView(TypedDict):
    index: Ordinal
    width: NonNegative
    height: NonNegative
    format: ImageFormat
    already_present: bool


class PrepareView(TypedDict):
    operation: str
    question: str
    expires_at: Timestamp
    images: list[PreparedImageView]
    gallery: GalleryView


class ConfirmView(TypedDict):
    gallery: GalleryView
    added: NonNegative
    already_present: NonNegative


class SourceArguments(TypedDict):
    """The source of a prepare, as the tool's arguments name it."""

    source: Literal["image_ref", "attachments", "workspace"]
    image_ref: NotRequired[str]
    attachment_indices: NotRequired[list[int]]
    workspace_paths: NotRequired[list[str]]


def _ordered_items() -> QuerySet[GalleryItem]:
    return GalleryItem.objects.select_related("blob").order_by("position")


def extensions_of(account: AccountIdentity) -> QuerySet[Extension]:
    return Extension.objects.filter(owner_id=account.pk).select_related("gallery").order_by("id")


@functools.cache
def _extension_views_sql(vendor: str) -> str:
    """The account's extensions, galleries and items (with each item's blob) in one statement,
    written once per database vendor: ``arkme_context`` reads it on every call, and building
    the same through the ORM's prefetches cost several times more than running it."""
    e, g, i, b = table(Extension), table(Gallery), table(GalleryItem), table(Blob)
    ec = {name: column(Extension, name) for name in ("id", "public_id", "name", "owner")}
    gc = {name: column(Gallery, name) for name in ("id", "extension", "revision")}
    ic = {name: column(GalleryItem, name) for name in ("public_id", "position", "gallery", "blob")}
    bc = {name: column(Blob, name) for name in ("id", "width", "height", "format", "size")}
    return (
        # Identifiers come from the models' metadata; the account is a bound parameter.
        f"SELECT e.{ec['public_id']}, e.{ec['name']}, g.{gc['revision']}, i.{ic['public_id']},"  # noqa: S608
        f" i.{ic['position']}, b.{bc['width']}, b.{bc['height']}, b.{bc['format']}, b.{bc['size']}"
        f" FROM {e} e JOIN {g} g ON g.{gc['extension']} = e.{ec['id']}"
        f" LEFT JOIN {i} i ON i.{ic['gallery']} = g.{gc['id']} LEFT JOIN {b} b ON b.{bc['id']} = i.{ic['blob']}"
        f" WHERE e.{ec['owner']} = %s ORDER BY e.{ec['id']}, i.{ic['position']}"
    )


def extension_views(account: AccountIdentity) -> list[ExtensionView]:
    """The account's extensions with their galleries, oldest first, in one statement."""
    with hot_cursor() as cursor:
        cursor.execute(_extension_views_sql(cursor.db.vendor), [account.pk])
        rows = cursor.fetchall()
    views: list[ExtensionView] = []
    capacity = settings.ARKME_GALLERY_CAPACITY
    for extension, name, revision, item, position, width, height, fmt, size in rows:
        if not views or views[-1]["extension"] != extension:
            views.append({"extension": extension, "name": name,
                          "gallery": {"extension": extension, "revision": revision, "capacity": capacity,
                                      "items": []}})
        if item is not None:
            views[-1]["gallery"]["items"].append({"item": item, "position": position, "width": width,
                                                  "height": height, "format": fmt, "bytes": size})
    return views


EXTENSION_FIELDS = ("id", "public_id", "owner_id", "name", "created_at")
GALLERY_FIELDS = ("id", "extension_id", "revision", "updated_at")
# The relations attached by hand as select_related would (their caches, not the descriptors).
EXTENSION_GALLERY = Extension.gallery.related
GALLERY_EXTENSION = Gallery.extension.field


@functools.cache
def _extension_for_owner_sql(vendor: str) -> str:
    """An extension of the owner's, with its gallery, in one statement written once per vendor:
    every gallery call starts with it, and the ORM's select_related cost several times more to
    compose than the statement costs to run (docs/ARCHITECTURE.md)."""
    e, g = table(Extension), table(Gallery)
    return (
        # Identifiers come from the models' metadata; values are bound parameters.
        f"SELECT {columns(Extension, 'e', EXTENSION_FIELDS)}, {columns(Gallery, 'g', GALLERY_FIELDS)}"  # noqa: S608
        f" FROM {e} e LEFT JOIN {g} g ON g.{column(Gallery, 'extension')} = e.{column(Extension, 'id')}"
        f" WHERE e.{column(Extension, 'public_id')} = %s AND e.{column(Extension, 'owner')} = %s"
    )


def extension_with_gallery(row: Sequence[Any], db: Any) -> Extension:
    """The extension and its gallery from a row of ``EXTENSION_FIELDS`` then ``GALLERY_FIELDS``,
    the gallery attached both ways as select_related attaches it (an extension without one
    is left to raise on access, as the ORM's would)."""
    extension = from_row(Extension, EXTENSION_FIELDS, row[:len(EXTENSION_FIELDS)], db)
    if row[len(EXTENSION_FIELDS)] is not None:
        gallery = from_row(Gallery, GALLERY_FIELDS, row[len(EXTENSION_FIELDS):], db)
        EXTENSION_GALLERY.set_cached_value(extension, gallery)
        GALLERY_EXTENSION.set_cached_value(gallery, extension)
    return extension


def extension_for_owner(account: AccountIdentity, public_id: str) -> Extension:
    """Fetch-and-authorise: another account's extension is indistinguishable from none."""
    db = default_db()
    with hot_cursor() as cursor:
        cursor.execute(_extension_for_owner_sql(db.vendor), [str(public_id), account.pk])
        row = cursor.fetchone()
    if row is None:
        raise NotFound("No such extension.", code=ErrorCode.UNKNOWN_EXTENSION)
    return extension_with_gallery(row, db)


def item_order(account: AccountIdentity, extension: str) -> list[str]:
    """The ids of the account's extension's gallery items, first to last."""
    target = extension_for_owner(account, extension)
    return list(GalleryItem.objects.filter(gallery__extension=target).order_by("position")
                .values_list("public_id", flat=True))


def item_blob_sha(account: AccountIdentity, extension: str, item: str) -> str:
    """The content digest of one item of the account's extension's gallery (fetch-and-authorise:
    another account's item, or an item since deleted, is ``404 unknown_item``)."""
    target = extension_for_owner(account, extension)
    sha = (GalleryItem.objects.filter(gallery__extension=target, public_id=str(item))
           .values_list("blob__sha256", flat=True).first())
    if sha is None:
        raise NotFound("No such item in this gallery.", code=ErrorCode.UNKNOWN_ITEM)
    return sha


def gallery_items(gallery: Gallery) -> Sequence[GalleryItem]:
    """The items in order: from a prefetch when there is one, else one statement."""
    prefetched: dict[str, Any] = getattr(gallery, "_prefetched_objects_cache", {})
    if "items" in prefetched:
        return list(prefetched["items"])
    return list(_ordered_items().filter(gallery=gallery))


def gallery_view(gallery: Gallery) -> GalleryView:
    """The ``Gallery`` projection: never keys, fingerprints, paths or refs."""
    return {
        "extension": gallery.extension.public_id,
        "revision": gallery.revision,
        "capacity": settings.ARKME_GALLERY_CAPACITY,
        "items": [
            {
                "item": item.public_id,
                "position": item.position,
                "width": item.blob.width,
                "height": item.blob.height,
                "format": item.blob.format,
                "bytes": item.blob.size,
            }
            for item in gallery_items(gallery)
        ],
    }


@functools.cache
def _gallery_shas_sql(vendor: str) -> str:
    i, b = table(GalleryItem), table(Blob)
    return (f"SELECT b.{column(Blob, 'sha256')} FROM {i} i JOIN {b} b ON b.{column(Blob, 'id')} = i.{column(GalleryItem, 'blob')}"  # noqa: S608
            f" WHERE i.{column(GalleryItem, 'gallery')} = %s ORDER BY i.{column(GalleryItem, 'position')}")


def gallery_shas(gallery: Gallery) -> list[str]:
    """The content fingerprints of the gallery's items, first to last: prepare and confirm
    each read them (confirm under the gallery's lock), so the statement is written by hand."""
    with hot_cursor() as cursor:
        cursor.execute(_gallery_shas_sql(default_db().vendor), [gallery.pk])
        return [sha for (sha,) in cursor.fetchall()]


CONFIRMATION = "确认"


def _question(extension: Extension, adding: int, after: int, present: int) -> str:
    noun = "image" if adding == 1 else "images"
    extra = f" ({present} already in it will be skipped)" if present else ""
    return (
        f"Add {adding} {noun} to the preview gallery of “{extension.name}”{extra}? "
        f"The gallery will then have {after} of {settings.ARKME_GALLERY_CAPACITY} images. "
        f"Reply {CONFIRMATION} to confirm."
    )


def operation_view(operation: PendingOperation) -> PrepareView:
    """A pending add as prepare answers it, against the gallery's content now."""
    gallery = operation.extension.gallery
    present = set(gallery_shas(gallery))
    seen: set[str] = set()
    images: list[PreparedImageView] = []
    for index, source in enumerate(operation.sources, start=1):
        sha = source["content_sha256"]
        images.append({
            "index": index, "width": source["width"], "height": source["height"],
            "format": source["format"], "already_present": sha in present or sha in seen,
        })
        seen.add(sha)
    adding = sum(1 for image in images if not image["already_present"])
    return {
        "operation": operation.public_id,
        "question": _question(operation.extension, adding, len(present) + adding, len(images) - adding),
        "expires_at": operation.expires_at.isoformat(),
        "images": images,
        "gallery": gallery_view(gallery),
    }


# --- The staff dashboard -------------------------------------------------------------------

AGE_BUCKETS = ((300, "under 5 min"), (900, "5–15 min"), (None, "past expiry, not yet swept"))


def pending_operations_by_age(now: datetime) -> list[tuple[str, int]]:
    """Pending adds by how long they have waited for their 确认 (read from the pending rows only)."""
    counts = dict.fromkeys((label for _, label in AGE_BUCKETS), 0)
    pending = PendingOperation.objects.filter(status=OperationStatus.PENDING).values_list("created_at", "expires_at")
    for created_at, expires_at in pending:
        waited = (now - created_at).total_seconds()
        if expires_at <= now:
            counts[AGE_BUCKETS[-1][1]] += 1
        else:
            counts[next(label for limit, label in AGE_BUCKETS if limit is None or waited < limit)] += 1
    return list(counts.items())


def galleries_near_capacity(*, share: float = 0.8, limit: int = 10) -> list[tuple[str, int]]:
    """The fullest galleries holding at least ``share`` of the capacity: (extension name, images)."""
    least = max(1, int(settings.ARKME_GALLERY_CAPACITY * share))
    rows = (Gallery.objects.annotate(images=Count("items")).filter(images__gte=least)
            .order_by("-images", "pk").values_list("extension__name", "images")[:limit])
    return [(name, images) for name, images in rows]
