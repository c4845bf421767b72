"""Periodic housekeeping of the registry."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from arkme.conversations.sessions import sessions_purge

from .approval_record import approvals_lapsed_recorded
from .audit import tool_calls_prune
from .idempotency import idempotency_purge
from .limits import rate_windows_purge
from .rollups import tool_calls_roll_up


@shared_task(name="toolregistry.tasks.purge_sessions")
def purge_sessions() -> int:
    """End idle sessions (and their attachments), forget expired idempotency keys and the call
    limits' ended windows, and record the approvals that lapsed unused."""
    idempotency_purge()
    rate_windows_purge()
    approvals_lapsed_recorded()
    return sessions_purge()


@shared_task(name="toolregistry.tasks.prune_audit")
def prune_audit() -> int:
    """Keep the tool-call audit for ``ARKME_AUDIT_RETENTION_DAYS``."""
    return tool_calls_prune(older_than_days=settings.ARKME_AUDIT_RETENTION_DAYS)


@shared_task(name="toolregistry.tasks.roll_up_tool_calls")
def roll_up_tool_calls() -> int:
    """Bring the dashboard's hourly roll-up of the audit up to date."""
    return tool_calls_roll_up()
