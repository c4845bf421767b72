"""The store tasks: promote staged images to their content addresses on a worker.

They take fingerprints, are idempotent, and are acknowledged late, so a worker lost mid-task
has it run again.
"""
from __future__ import annotations

from typing import Any

from celery import shared_task

from arkme.kernel.tasking import task_answer

from .promote import blob_promote, blobs_promote


@shared_task(name="galleries.store_blobs", acks_late=True)
def store_blobs(shas: list[str]) -> dict[str, Any]:
    # The bytes only: the caller records the blobs' rows in its own transaction.
    return task_answer(blobs_promote, shas=shas)


@shared_task(name="galleries.store_blob", acks_late=True)
def store_blob(sha256: str) -> dict[str, Any]:
    # One image: what a web process of the release before ``store_blobs`` sends, still served
    # while a deployment replaces it.
    return task_answer(blob_promote, sha256=sha256)
