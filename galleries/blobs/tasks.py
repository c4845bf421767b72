"""The store task: promotes a staged image to its content address on a worker.

It takes JSON values (a fingerprint and dimensions), is idempotent, and is acknowledged
late, so a worker lost mid-task has it run again.
"""
from __future__ import annotations

from typing import Any

from celery import shared_task

from arkme.kernel.tasking import task_answer

from .promote import blob_promote


@shared_task(name="galleries.store_blob", acks_late=True)
def store_blob(sha256: str, width: int, height: int, fmt: str) -> dict[str, Any]:
    return task_answer(blob_promote, sha256=sha256, width=width, height=height, format=fmt)
