"""Where captured attachments live: the object store, under a per-session prefix."""
from __future__ import annotations

import hashlib
from typing import IO, Iterable

from arkme.kernel.storage import ObjectStore, object_store

CHUNK = 1024 * 1024
CAPTURED_PREFIX = "captured/"


def attachment_store() -> ObjectStore:
    return object_store("blobs")


def attachment_key(session_public_id: str, batch: str, index: int) -> str:
    """Where the ``index``-th file of one message (a random ``batch``) of a session lives."""
    return f"{CAPTURED_PREFIX}{session_public_id}/{batch}/{index}"


def sha256_of(stream: IO[bytes]) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    stream.seek(0)
    for chunk in iter(lambda: stream.read(CHUNK), b""):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return digest.hexdigest(), size


def delete_attachments(keys: Iterable[str]) -> None:
    """Best effort: a key left behind is found again by the session purge."""
    attachment_store().delete_quietly(list(keys))
