"""System checks of the deployment: storage the service cannot write is found before traffic."""
from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from arkme.kernel.errors import StorageUnavailable
from arkme.kernel.storage import object_store

STORAGE_TAG = "storage"


@register(STORAGE_TAG, deploy=True)
def check_blob_store_writable(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """With ``ARKME_STORAGE=s3``: the bucket exists and takes a write, a read and a delete.

    A deployment check (``manage.py check --deploy``; ``--deploy --tag storage`` alone), since it
    talks to the bucket: ordinary commands should not wait on the network.
    """
    if settings.ARKME_STORAGE != "s3":
        return []
    store = object_store("blobs")
    key = f"checks/{uuid.uuid4().hex}"
    try:
        written = store.put_if_absent(key, b"arkme storage check")
        read = store.read(key) if written else b""
        store.delete(key)
    except StorageUnavailable as exc:
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "unknown"
        return [Error(
            f"The S3 bucket {settings.ARKME_S3_BUCKET!r} cannot be written ({cause}).",
            hint="Check ARKME_S3_BUCKET, ARKME_S3_ENDPOINT_URL, ARKME_S3_REGION and the credentials' rights "
                 "(PutObject, GetObject, DeleteObject on the bucket).",
            id="arkme.E001",
        )]
    if read != b"arkme storage check":
        return [Error(f"The S3 bucket {settings.ARKME_S3_BUCKET!r} did not return what was written.",
                      id="arkme.E002")]
    return []


@register()
def check_tasks_end_before_redelivery(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """On a Redis broker, the task time limit is below the visibility timeout.

    Redis hands an unacknowledged task to a worker again once the visibility timeout passes,
    even while the first worker still runs it; with acknowledgement after the task, a task
    allowed to run longer would be run twice, and a slow one again and again.
    """
    broker = settings.CELERY_BROKER_URL or ""
    if not broker.startswith(("redis://", "rediss://")):
        return []
    limit = settings.CELERY_TASK_TIME_LIMIT
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    if limit < visibility:
        return []
    return [Error(
        f"CELERY_TASK_TIME_LIMIT ({limit}s) must be shorter than the Redis visibility timeout ({visibility}s).",
        hint="Lower CELERY_TASK_TIME_LIMIT or raise CELERY_VISIBILITY_TIMEOUT, or a slow task runs twice.",
        id="arkme.E003",
    )]
