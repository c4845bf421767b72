"""Pre-execute approvals: single use, expiring, bound to session, tool and exact arguments."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.kernel.errors import ApprovalRequired
from arkme.kernel.ids import token_digest

from .models import ApprovalGrant

TOKEN_PREFIX = "apv_"  # noqa: S105 - a prefix, not a secret


@dataclass(frozen=True)
class IssuedApproval:
    token: str
    expires_at: datetime


def approval_issue(*, session: AgentSession, tool_name: str, digest: str) -> IssuedApproval:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(seconds=settings.ARKME_APPROVAL_TTL_SECONDS)
    ApprovalGrant.objects.create(
        session=session, tool_name=tool_name, arguments_digest=digest,
        token_hash=token_digest(token), expires_at=expires_at,
    )
    return IssuedApproval(token=token, expires_at=expires_at)


def approval_consume(*, session: AgentSession, tool_name: str, digest: str, token: object) -> None:
    """Use the approval up, or raise ``403 approval_required`` saying why it does not count.

    The use is one conditional UPDATE, so two calls racing with one token cannot both win.
    Called inside the call's transaction: if the call fails, the approval is still unused.
    """
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise ApprovalRequired(details={"reason": "missing"} if not token else {"reason": "invalid"})
    now = timezone.now()
    used = ApprovalGrant.objects.filter(
        token_hash=token_digest(token), session=session, tool_name=tool_name,
        arguments_digest=digest, used_at__isnull=True, expires_at__gt=now,
    ).update(used_at=now)
    if used == 1:
        return
    grant = ApprovalGrant.objects.filter(token_hash=token_digest(token)).first()
    if grant is None or grant.session_id != session.pk:
        reason = "invalid"
    elif grant.tool_name != tool_name or grant.arguments_digest != digest:
        reason = "other_arguments"
    elif grant.used_at is not None:
        reason = "used"
    else:
        reason = "expired"
    raise ApprovalRequired(details={"reason": reason})
