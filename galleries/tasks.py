"""Celery tasks of the gallery: SVG rendering, blob storage and housekeeping.

Tasks take JSON values (fingerprints, dimensions, a sanitised SVG), call one service and are
idempotent; they are acknowledged late, so a worker lost mid-task has it run again.
"""
from __future__ import annotations

import base64

from celery import shared_task

from arkme.tasking import task_answer

from .blobs import blob_promote, blobs_collect_garbage
from .operations import operations_expire
from .svg_render import render_png


def _render(svg: str, width: int, height: int) -> str:
    return base64.b64encode(render_png(svg.encode("utf-8"), width, height)).decode("ascii")


@shared_task(name="galleries.render_svg", acks_late=True)
def render_svg(svg: str, width: int, height: int) -> dict:
    return task_answer(_render, svg, width, height)


@shared_task(name="galleries.store_blob", acks_late=True)
def store_blob(sha256: str, width: int, height: int, fmt: str) -> dict:
    return task_answer(blob_promote, sha256=sha256, width=width, height=height, format=fmt)


@shared_task(name="galleries.expire_operations")
def expire_operations() -> int:
    return operations_expire()


@shared_task(name="galleries.collect_garbage")
def collect_garbage() -> int:
    return blobs_collect_garbage().total
