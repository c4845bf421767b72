"""Reads of galleries, and the one projection a gallery result takes."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from arkme.errors import NotFound
from arkme.models import Account

from .blobstore import blob_key, blob_store
from .models import Blob, Extension, Gallery


def extensions_of(account: Account) -> QuerySet[Extension]:
    return Extension.objects.filter(owner=account).select_related("gallery").order_by("id")


def extension_for_owner(account: Account, public_id: str) -> Extension:
    """Fetch-and-authorise: another account's extension is indistinguishable from none."""
    extension = extensions_of(account).filter(public_id=str(public_id)).first()
    if extension is None:
        raise NotFound("No such extension.", code="unknown_extension")
    return extension


def gallery_view(gallery: Gallery) -> dict[str, Any]:
    """The ``Gallery`` projection: never keys, fingerprints, paths or refs."""
    items = gallery.items.select_related("blob").order_by("position")
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
            for item in items
        ],
    }


def read_blob(blob: Blob) -> bytes:
    return blob_store().read(blob_key(blob.sha256))


def gallery_shas(gallery: Gallery) -> list[str]:
    return list(gallery.items.order_by("position").values_list("blob__sha256", flat=True))
