"""Periodic housekeeping of the galleries: expiring operations, collecting garbage.

The tasks that do a request's work live next to what they wrap: the SVG render in
``ingest.svg_render`` and the blob store in ``blobs.tasks``.
"""
from __future__ import annotations

from celery import shared_task

from .blobs.services import blobs_collect_garbage
from .services.gallery_add import operations_expire


@shared_task(name="galleries.expire_operations")
def expire_operations() -> int:
    return operations_expire()


@shared_task(name="galleries.collect_garbage")
def collect_garbage() -> int:
    return blobs_collect_garbage().total
