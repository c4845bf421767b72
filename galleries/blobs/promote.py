"""Promoting a staged image to its content address: what the store task does. Idempotent."""
from __future__ import annotations

from typing import TypedDict

from django.db import IntegrityError, transaction

from arkme.kernel.errors import ContentRejected, ErrorCode

from ..ingest.process_image import sha256_hex
from ..models import Blob
from .storage import blob_key, blob_store, staging_key


class Promoted(TypedDict):
    sha256: str
    created: bool


def blob_promote(*, sha256: str, width: int, height: int, format: str) -> Promoted:
    """Move a staged image into its content address and record it. Idempotent."""
    store = blob_store()
    final = blob_key(sha256)
    if Blob.objects.filter(sha256=sha256).exists() and store.exists(final):
        return {"sha256": sha256, "created": False}
    staged = staging_key(sha256)
    try:
        data = store.read(staged)
    except FileNotFoundError:
        # A retried task whose first run got as far as the store: the blob is already there.
        data, staged = store.read(final), final
    if sha256_hex(data) != sha256:
        store.delete(staging_key(sha256))
        raise ContentRejected("A staged image did not match its fingerprint.", code=ErrorCode.BLOB_CORRUPTED)
    created = store.put_copy_if_absent(final, staged, data) if staged != final else False
    if not created and sha256_hex(store.read(final)) != sha256:
        # Whatever is at the key is damaged: replace it with the verified bytes.
        store.delete(final)
        store.put_if_absent(final, data)
    try:
        with transaction.atomic():
            Blob.objects.get_or_create(
                sha256=sha256, defaults={"size": len(data), "width": width, "height": height, "format": format}
            )
    except IntegrityError:
        pass  # a concurrent promotion recorded it first
    store.delete(staging_key(sha256))
    return {"sha256": sha256, "created": created}
