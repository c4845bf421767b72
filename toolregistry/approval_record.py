"""The approval record: each decision about an approval or a standing grant, and where it was
heard, kept beside the audit and linked to the call it allowed.

One function writes it, so every door and page records the same way; the rows are
append-only (the audit's retention command prunes them with the calls).
"""
from __future__ import annotations

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
