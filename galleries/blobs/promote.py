"""Promoting a staged image to its content address: what the store task does. Idempotent.

The task moves bytes only. The caller records the blob's row in its own transaction
(``blobs_record``), so a confirm of twenty images commits once, with its gallery change; an
object whose row never commits is an orphan that the garbage collection removes after its
grace period.
"""
from __future__ import annotations

from typing import TypedDict

from arkme.kernel.errors import ContentRejected, ErrorCode

from ..ingest.process_image import sha256_hex
from .storage import blob_key, blob_store, staging_key


class Promoted(TypedDict):
    sha256: str
    created: bool


def blob_promote(*, sha256: str) -> Promoted:
    """Move a staged image into its content address, verified. Idempotent: an image already
    there (stored by an earlier confirm whose commit failed, or by this task's first run) is
    verified and left as it is; a damaged one is replaced."""
    store = blob_store()
    final = blob_key(sha256)
    if store.exists(final):
        if sha256_hex(store.read(final)) == sha256:
            store.delete(staging_key(sha256))
            return {"sha256": sha256, "created": False}
        store.delete(final)  # damaged: the staged bytes replace it below
    data = store.read(staging_key(sha256))
    if sha256_hex(data) != sha256:
        store.delete(staging_key(sha256))
        raise ContentRejected("A staged image did not match its fingerprint.", code=ErrorCode.BLOB_CORRUPTED)
    created = store.put_copy_if_absent(final, staging_key(sha256), data)
    store.delete(staging_key(sha256))
    return {"sha256": sha256, "created": created}
