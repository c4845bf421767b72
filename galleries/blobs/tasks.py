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
def store_blob(sha256: str) -> dict[str, Any]:
    # The bytes only: the caller records the blob's row in its own transaction.
    return task_answer(blob_promote, sha256=sha256)
