"""Periodic housekeeping of the registry."""
from __future__ import annotations

from celery import shared_task

from .sessions import sessions_purge


@shared_task(name="toolregistry.tasks.purge_sessions")
def purge_sessions() -> int:
    return sessions_purge()
