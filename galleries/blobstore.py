"""Content-addressed blob storage over the configured Django storage.

A blob's key derives from the sha256 of its bytes, and a write of an existing key is a
no-op. Local files write to a temporary name and link it into place (never overwriting);
S3 uses a conditional ``put_object(IfNoneMatch='*')`` through boto3, because
django-storages' upload path cannot send it. The application checks the sha256 itself.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from datetime import datetime, timezone
from typing import IO, Iterator

from django.core.files.storage import FileSystemStorage, storages

from arkme.errors import DependencyUnavailable

logger = logging.getLogger(__name__)

BLOB_PREFIX = "blobs/"
STAGING_PREFIX = "staging/"


class StorageUnavailable(DependencyUnavailable):
    code = "storage_unavailable"
    default_message = "Image storage is unavailable; try again."


def blob_key(sha256: str) -> str:
    return f"{BLOB_PREFIX}{sha256[:2]}/{sha256}"


def staging_key(sha256: str) -> str:
    return f"{STAGING_PREFIX}{sha256}"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BlobStore:
    def __init__(self, storage=None) -> None:
        self.storage = storage or storages["blobs"]
        self.local = isinstance(self.storage, FileSystemStorage)

    # -- writes --------------------------------------------------------------------------
    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Store ``data`` at ``key`` unless something is there. True when this call wrote it."""
        try:
            return self._put_local(key, data) if self.local else self._put_s3(key, data)
        except StorageUnavailable:
            raise
        except Exception as exc:
            logger.exception("conditional put failed")
            raise StorageUnavailable() from exc

    def _put_local(self, key: str, data: bytes) -> bool:
        final = self.storage.path(key)
        directory = os.path.dirname(final)
        os.makedirs(directory, exist_ok=True)
        if os.path.exists(final):
            return False
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, final)  # atomic, and refuses to replace an existing file
            except FileExistsError:
                return False
            return True
        finally:
            os.unlink(temporary)

    def _put_s3(self, key: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError

        client = self.storage.bucket.meta.client
        try:
            client.put_object(
                Bucket=self.storage.bucket_name, Key=self.storage._normalize_name(key), Body=data,
                IfNoneMatch="*", ContentType="application/octet-stream",
            )
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = exc.response.get("Error", {}).get("Code")
            if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        try:
            self.storage.delete(key)
        except Exception as exc:
            logger.exception("delete failed")
            raise StorageUnavailable() from exc

    # -- reads ---------------------------------------------------------------------------
    def read(self, key: str) -> bytes:
        try:
            with self.storage.open(key, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise
        except Exception as exc:
            logger.exception("read failed")
            raise StorageUnavailable() from exc

    def open(self, key: str) -> IO[bytes]:
        try:
            return self.storage.open(key, "rb")
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise StorageUnavailable() from exc

    def exists(self, key: str) -> bool:
        try:
            return self.storage.exists(key)
        except Exception as exc:
            raise StorageUnavailable() from exc

    def keys(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        """Every stored key under ``prefix`` with its modification time (UTC)."""
        if self.local:
            root = self.storage.path(prefix)
            base = self.storage.path("")
            for directory, _, files in os.walk(root):
                for name in files:
                    if name.startswith(".incoming-"):
                        continue
                    path = os.path.join(directory, name)
                    modified = datetime.fromtimestamp(os.stat(path).st_mtime, tz=timezone.utc)
                    yield os.path.relpath(path, base).replace(os.sep, "/"), modified
        else:
            location = self.storage.location.strip("/")
            full_prefix = f"{location}/{prefix}" if location else prefix
            for obj in self.storage.bucket.objects.filter(Prefix=full_prefix):
                key = obj.key[len(location) + 1:] if location else obj.key
                yield key, obj.last_modified


def blob_store() -> BlobStore:
    return BlobStore()
