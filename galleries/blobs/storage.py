"""The blob area of the object store: content addresses and staging.

A blob's key derives from the sha256 of its bytes, and a write of an existing key is a
no-op (``arkme.kernel.storage``); the application checks the sha256 itself, because S3
emulators do not.
"""
from __future__ import annotations

from arkme.kernel.storage import ObjectStore, object_store

BLOB_PREFIX = "blobs/"
STAGING_PREFIX = "staging/"
THUMBNAIL_PREFIX = "thumbs/"


def blob_key(sha256: str) -> str:
    return f"{BLOB_PREFIX}{sha256[:2]}/{sha256}"


def staging_key(sha256: str) -> str:
    return f"{STAGING_PREFIX}{sha256}"


def thumbnail_key(sha256: str, side: int) -> str:
    return f"{THUMBNAIL_PREFIX}{sha256[:2]}/{sha256}-{side}.png"


def blob_store() -> ObjectStore:
    return object_store("blobs")
