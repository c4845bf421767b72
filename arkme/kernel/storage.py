"""Objects in the configured Django storage, written once and never overwritten.

One adapter serves both the content-addressed blobs and the captured attachments. Local
files are written to a temporary name and linked into place (a link refuses to replace an
existing file); S3 uses a conditional ``put_object(IfNoneMatch='*')`` through boto3, because
django-storages' upload path cannot send it. Storage faults (the libraries' own exception
types, nothing broader) become ``StorageUnavailable``, a 503 that is safe to retry; a
missing object stays ``FileNotFoundError`` for the caller to judge; anything else is a
programming error and propagates as one.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from datetime import UTC, datetime
from typing import IO, Iterator

from botocore.exceptions import BotoCoreError, ClientError
from django.core.exceptions import SuspiciousOperation
from django.core.files.storage import FileSystemStorage, Storage, storages
from storages.utils import clean_name, safe_join

from .errors import StorageUnavailable
from .metrics import STORE_FAULTS

logger = logging.getLogger(__name__)

# What the storage libraries raise for an unreachable, refusing or failing backend.
STORAGE_ERRORS: tuple[type[Exception], ...] = (OSError, BotoCoreError, ClientError)


def _fault(operation: str) -> StorageUnavailable:
    """The 503 a storage fault becomes, counted by operation."""
    STORE_FAULTS.labels(operation).inc()
    return StorageUnavailable()
INCOMING_PREFIX = ".incoming-"
Payload = bytes | IO[bytes]


class ObjectStore:
    """The operations both back-ends share; ``put_if_absent`` is each one's own."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def put_if_absent(self, key: str, data: Payload) -> bool:
        """Store ``data`` at ``key`` unless something is there. True when this call wrote it."""
        try:
            return self._put(key, data)
        except STORAGE_ERRORS as exc:
            logger.warning("storage write failed: %s", type(exc).__name__)
            raise _fault("put_if_absent") from exc

    def _put(self, key: str, data: Payload) -> bool:
        raise NotImplementedError

    def put_copy_if_absent(self, key: str, source_key: str, data: bytes) -> bool:
        """``put_if_absent(key, data)``, where ``data`` are the bytes stored at ``source_key``
        (read and checked by the caller): a back-end that can reuse the stored object does."""
        return self.put_if_absent(key, data)

    def read(self, key: str) -> bytes:
        with self.open(key) as handle:
            try:
                return handle.read()
            except FileNotFoundError:
                raise
            except STORAGE_ERRORS as exc:
                logger.warning("storage read failed: %s", type(exc).__name__)
                raise _fault("read") from exc

    def read_at_most(self, key: str, limit: int) -> bytes:
        """At most ``limit`` bytes from the start of the object."""
        with self.open(key) as handle:
            try:
                return handle.read(limit)
            except STORAGE_ERRORS as exc:
                logger.warning("storage read failed: %s", type(exc).__name__)
                raise _fault("read_at_most") from exc

    def open(self, key: str) -> IO[bytes]:
        try:
            handle: IO[bytes] = self.storage.open(key, "rb")
        except FileNotFoundError:
            raise
        except STORAGE_ERRORS as exc:
            logger.warning("storage open failed: %s", type(exc).__name__)
            raise _fault("open") from exc
        return handle

    def exists(self, key: str) -> bool:
        try:
            return bool(self.storage.exists(key))
        except STORAGE_ERRORS as exc:
            raise _fault("exists") from exc

    def delete(self, key: str) -> None:
        try:
            self.storage.delete(key)
        except STORAGE_ERRORS as exc:
            logger.warning("storage delete failed: %s", type(exc).__name__)
            raise _fault("delete") from exc

    def delete_quietly(self, keys: list[str]) -> int:
        """Best effort, for clean-up after a commit: a key left behind is found by the next
        collection. Returns how many were deleted."""
        deleted = 0
        for key in keys:
            try:
                self.delete(key)
                deleted += 1
            except StorageUnavailable:
                logger.warning("an object was left for the next collection")
        return deleted

    def keys(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        """Every stored key under ``prefix`` with its modification time (UTC)."""
        raise NotImplementedError


class LocalObjectStore(ObjectStore):
    storage: FileSystemStorage

    def _put(self, key: str, data: Payload) -> bool:
        final = self.storage.path(key)
        directory = os.path.dirname(final)
        os.makedirs(directory, exist_ok=True)
        if os.path.exists(final):
            return False
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=INCOMING_PREFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                if isinstance(data, bytes):
                    handle.write(data)
                else:
                    data.seek(0)
                    shutil.copyfileobj(data, handle, 1024 * 1024)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, final)  # atomic, and refuses to replace an existing file
            except FileExistsError:
                return False
            return True
        finally:
            os.unlink(temporary)

    def put_copy_if_absent(self, key: str, source_key: str, data: bytes) -> bool:
        # A hard link to the file already written and synced, not a second copy of its bytes.
        final = self.storage.path(key)
        try:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            try:
                os.link(self.storage.path(source_key), final)
            except FileExistsError:
                return False
            except FileNotFoundError:
                return self._put(key, data)
            return True
        except STORAGE_ERRORS as exc:
            logger.warning("storage write failed: %s", type(exc).__name__)
            raise _fault("put_if_absent") from exc

    def keys(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        root, base = self.storage.path(prefix), self.storage.path("")
        for directory, _, files in os.walk(root):
            for name in files:
                if name.startswith(INCOMING_PREFIX):
                    continue
                path = os.path.join(directory, name)
                modified = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
                yield os.path.relpath(path, base).replace(os.sep, "/"), modified


def s3_object_key(storage: Storage, name: str) -> str:
    """The bucket key django-storages gives ``name``: under the storage's location, refused
    when it would leave it (a ``..`` past the top)."""
    try:
        return safe_join(storage.location, clean_name(name))  # type: ignore[attr-defined]
    except ValueError as exc:
        raise SuspiciousOperation(f"Attempted access to {name!r} denied.") from exc


class S3ObjectStore(ObjectStore):
    def _put(self, key: str, data: Payload) -> bool:
        storage = self.storage
        client = storage.bucket.meta.client  # type: ignore[attr-defined]
        if not isinstance(data, bytes):
            data.seek(0)
        try:
            client.put_object(
                Bucket=storage.bucket_name, Key=s3_object_key(storage, key),  # type: ignore[attr-defined]
                Body=data, IfNoneMatch="*", ContentType="application/octet-stream",
            )
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = exc.response.get("Error", {}).get("Code")
            if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise
        return True

    def read_at_most(self, key: str, limit: int) -> bytes:
        """A ranged GET: sniffing 512 bytes of a 20 MiB object fetches 512 bytes."""
        try:
            return self._get_range(key, limit)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                raise FileNotFoundError(key) from exc
            if code == "InvalidRange":
                return b""  # an empty object
            logger.warning("storage read failed: %s", type(exc).__name__)
            raise _fault("read_at_most") from exc
        except STORAGE_ERRORS as exc:
            logger.warning("storage read failed: %s", type(exc).__name__)
            raise _fault("read_at_most") from exc

    def _get_range(self, key: str, limit: int) -> bytes:
        storage = self.storage
        client = storage.bucket.meta.client  # type: ignore[attr-defined]
        answer = client.get_object(Bucket=storage.bucket_name, Key=s3_object_key(storage, key),  # type: ignore[attr-defined]
                                   Range=f"bytes=0-{max(limit, 1) - 1}")
        return bytes(answer["Body"].read(limit))

    def keys(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        storage = self.storage
        location = storage.location.strip("/")  # type: ignore[attr-defined]
        full_prefix = f"{location}/{prefix}" if location else prefix
        try:
            for obj in storage.bucket.objects.filter(Prefix=full_prefix):  # type: ignore[attr-defined]
                yield (obj.key[len(location) + 1:] if location else obj.key), obj.last_modified
        except STORAGE_ERRORS as exc:
            raise _fault("keys") from exc


def object_store(alias: str = "blobs") -> ObjectStore:
    """The adapter over ``STORAGES[alias]``: local files or S3."""
    storage = storages[alias]
    if isinstance(storage, FileSystemStorage):
        return LocalObjectStore(storage)
    return S3ObjectStore(storage)
