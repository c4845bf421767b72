"""Periodic housekeeping of the registry."""
from __future__ import annotations

from celery import shared_task

from arkme.conversations.sessions import sessions_purge

from .idempotency import idempotency_purge


@shared_task(name="toolregistry.tasks.purge_sessions")
def purge_sessions() -> int:
    """End idle sessions (and their attachments) and forget expired idempotency keys."""
    idempotency_purge()
    return sessions_purge()
