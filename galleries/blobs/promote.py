"""Promoting a staged image to its content address: what the store task does. Idempotent.

The task moves bytes only. The caller records the blob's row in its own transaction
(``blobs_record``), so a confirm of twenty images commits once, with its gallery change; an
object whose row never commits is an orphan that the garbage collection removes after its
grace period.
"""
from __future__ import annotations

from typing import TypedDict

from arkme.kernel.errors import ArkmeError, ContentRejected, ErrorCode

from ..ingest.process_image import sha256_hex
from .storage import blob_key, blob_store, staging_key


class Promoted(TypedDict):
    sha256: str
    created: bool


def blob_promote(*, sha256: str) -> Promoted:
    """Move a staged image into its content address, verified. Idempotent: an image already
    there (stored by an earlier confirm whose commit failed, by a concurrent task for the same
    image, or by this task's first run) is verified and left as it is; a damaged one is
    replaced."""
    store = blob_store()
    final, staged = blob_key(sha256), staging_key(sha256)
    there = store.read(final) if store.exists(final) else None
    created = False
    if there is not None and sha256_hex(there) == sha256:
        data = there
    else:
        try:
            data = store.read(staged)
        except FileNotFoundError:
            # A concurrent task for the same image (the staging key is shared) promoted it.
            data = store.read(final)
        if sha256_hex(data) != sha256:
            store.delete(staged)
            raise ContentRejected("A staged image did not match its fingerprint.", code=ErrorCode.BLOB_CORRUPTED)
        if there is not None:
            store.delete(final)  # damaged: replaced by the verified bytes
        created = store.put_copy_if_absent(final, staged, data)
    store.delete(staged)
    return {"sha256": sha256, "created": created}


def blobs_promote(*, shas: list[str]) -> list[Promoted]:
    """``blob_promote`` for each image, every one tried: one that fails leaves the others
    stored (a retry finds them in place), and the first failure is raised after the last."""
    promoted: list[Promoted] = []
    failure: ArkmeError | None = None
    for sha256 in shas:
        try:
            promoted.append(blob_promote(sha256=sha256))
        except ArkmeError as error:
            failure = failure or error
    if failure is not None:
        raise failure
    return promoted
