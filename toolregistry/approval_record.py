"""The approval record: each decision about an approval or a standing grant, and where it was
heard, kept beside the audit and linked to the call it allowed.

One function writes each decision as it happens, so every door and page records the same
way; the periodic purge records the approvals that lapsed unused, in bulk. The rows are
append-only (the audit's retention command prunes them with the calls).
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from .models import ApprovalDecision, ApprovalGrant, ApprovalVia, StandingGrant


def approval_recorded(*, decision: ApprovalDecision.Kind, via: ApprovalVia, session_public_id: str, tool_name: str,
                      approval: ApprovalGrant | int | None = None,
                      standing_grant: StandingGrant | int | None = None,
                      tool_call: int | None = None) -> ApprovalDecision:
    """Record one decision. ``approval``, ``standing_grant``: the row or its primary key;
    ``tool_call``: the audit row's id of the call the decision allowed (a ``used``)."""
    return ApprovalDecision.objects.create(
        approval_id=approval.pk if isinstance(approval, ApprovalGrant) else approval,
        standing_grant_id=standing_grant.pk if isinstance(standing_grant, StandingGrant) else standing_grant,
        tool_call_id=tool_call, session_public_id=session_public_id, tool_name=tool_name,
        decision=decision, via=via,
    )


def approvals_lapsed_recorded(*, batch_size: int = 1000) -> int:
    """Record ``expired`` for each approval that lapsed unused and unanswered (one presented
    after it expired was recorded then), once; returns how many. Run with the periodic purge.
    Only approvals asked within the audit's retention are looked at (read by their creation
    index): an older one's record is pruned anyway."""
    since = timezone.now() - timedelta(days=settings.ARKME_AUDIT_RETENTION_DAYS)
    lapsed = ApprovalGrant.objects.filter(
        created_at__gte=since, expires_at__lte=timezone.now(), used_at__isnull=True, declined_at__isnull=True,
    ).exclude(Exists(ApprovalDecision.objects.filter(approval=OuterRef("pk"), decision=ApprovalDecision.Kind.EXPIRED)))
    recorded = 0
    while batch := list(lapsed.select_related("session").order_by("pk")[:batch_size]):
        ApprovalDecision.objects.bulk_create([
            ApprovalDecision(approval=approval, session_public_id=approval.session.public_id,
                             tool_name=approval.tool_name, decision=ApprovalDecision.Kind.EXPIRED,
                             via=ApprovalVia.SYSTEM)
            for approval in batch])
        recorded += len(batch)
    return recorded
