"""The store task: promotes a staged image to its content address on a worker.

It takes a fingerprint, is idempotent, and is acknowledged late, so a worker lost mid-task
has it run again.
"""
from __future__ import annotations

from typing import Any

from celery import shared_task

from arkme.kernel.tasking import task_answer

from .promote import blob_promote


@shared_task(name="galleries.store_blob", acks_late=True)
def store_blob(sha256: str, *_: Any) -> dict[str, Any]:
    # Earlier versions also sent the dimensions (width, height, format), which the caller now
    # records itself: a task queued by one of them still runs.
    return task_answer(blob_promote, sha256=sha256)
