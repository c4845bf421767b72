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
def store_blob(sha256: str, width: int | None = None, height: int | None = None, fmt: str | None = None) -> dict[str, Any]:
    # The caller records the row in its own transaction. A web process of the previous release
    # (during a rolling deploy) sends the dimensions and expects the task to record it.
    record = (width, height, fmt) if width is not None and height is not None and fmt else None
    return task_answer(blob_promote, sha256=sha256, record=record)
