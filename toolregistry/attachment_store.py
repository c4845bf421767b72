"""Where captured attachments live: the blob storage, under a per-session prefix."""
from __future__ import annotations

import hashlib
import logging
from typing import IO, Iterable

from django.core.files.base import File
from django.core.files.storage import storages

from arkme.errors import DependencyUnavailable

logger = logging.getLogger(__name__)
CHUNK = 1024 * 1024


def _storage():
    return storages["blobs"]


def attachment_key(session_public_id: str, message_pk: int, index: int) -> str:
    return f"captured/{session_public_id}/{message_pk}/{index}"


def sha256_of(stream: IO[bytes]) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    stream.seek(0)
    for chunk in iter(lambda: stream.read(CHUNK), b""):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return digest.hexdigest(), size


def store_attachment(key: str, stream: IO[bytes]) -> None:
    try:
        stream.seek(0)
        saved = _storage().save(key, File(stream))
    except Exception as exc:  # storage back-ends raise many kinds of errors
        logger.exception("storing a captured attachment failed")
        raise DependencyUnavailable("Storage is unavailable; try again.", code="storage_unavailable") from exc
    if saved != key:
        # The key is unique per message and index, so another name means a stale file was there.
        _storage().delete(saved)
        raise DependencyUnavailable("Storage is unavailable; try again.", code="storage_unavailable")


def open_attachment(key: str) -> IO[bytes]:
    try:
        return _storage().open(key, "rb")
    except FileNotFoundError:
        raise
    except Exception as exc:
        logger.exception("reading a captured attachment failed")
        raise DependencyUnavailable("Storage is unavailable; try again.", code="storage_unavailable") from exc


def delete_attachments(keys: Iterable[str]) -> None:
    """Best effort: a key left behind is found again by the session purge."""
    storage = _storage()
    for key in keys:
        try:
            storage.delete(key)
        except Exception:
            logger.exception("deleting a captured attachment failed")
