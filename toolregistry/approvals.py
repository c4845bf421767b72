"""Pre-execute approvals: single use, expiring, bound to session, tool and exact arguments."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.kernel.errors import ApprovalRequired
from arkme.kernel.ids import token_digest
from arkme.kernel.metrics import APPROVALS
from arkme.kernel.tracing import event

from .models import ApprovalGrant

TOKEN_PREFIX = "apv_"  # noqa: S105 - a prefix, not a secret


@dataclass(frozen=True)
class IssuedApproval:
    token: str
    expires_at: datetime


@dataclass(frozen=True)
class SealedApproval:
    """A human's answer to an approval question that travelled sealed (MCP's ``requestState``,
    signed and bound to client, session, tool and arguments): a random nonce and when it was
    asked. Nothing is stored when the question is asked; the ledger records the nonce when the
    answer is used, and its uniqueness makes the answer single use."""

    nonce: str
    asked_at: datetime

    @property
    def token_hash(self) -> str:
        return token_digest("sealed:" + self.nonce)


def _spend_sealed(*, session: AgentSession, tool_name: str, digest: str, sealed: SealedApproval) -> None:
    now = timezone.now()
    expires_at = sealed.asked_at + timedelta(seconds=settings.ARKME_APPROVAL_TTL_SECONDS)
    if expires_at <= now:
        raise _refused("expired")
    try:
        with transaction.atomic():  # a savepoint: a replay fails here and the caller's transaction lives on
            ApprovalGrant.objects.create(session=session, tool_name=tool_name, arguments_digest=digest,
                                         token_hash=sealed.token_hash, expires_at=expires_at, used_at=now)
    except IntegrityError:
        raise _refused("used") from None


def approval_void(*, session: AgentSession, tool_name: str, digest: str, sealed: SealedApproval) -> None:
    """The human said no: the answer is spent, so replaying the question cannot turn it into a yes."""
    try:
        _spend_sealed(session=session, tool_name=tool_name, digest=digest, sealed=sealed)
    except ApprovalRequired:
        pass  # already spent or expired: unusable either way


def approval_issue(*, session: AgentSession, tool_name: str, digest: str) -> IssuedApproval:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(seconds=settings.ARKME_APPROVAL_TTL_SECONDS)
    ApprovalGrant.objects.create(
        session=session, tool_name=tool_name, arguments_digest=digest,
        token_hash=token_digest(token), expires_at=expires_at,
    )
    APPROVALS.labels("asked").inc()
    event("arkme.approval.asked")
    return IssuedApproval(token=token, expires_at=expires_at)


def approval_consume(*, session: AgentSession, tool_name: str, digest: str, token: object) -> None:
    """Use the approval up, or raise ``403 approval_required`` saying why it does not count.

    The use is one conditional UPDATE, so two calls racing with one token cannot both win.
    Called inside the call's transaction: if the call fails, the approval is still unused.
    A refusal is counted here, where it leaves for the caller (``approval_void`` makes and
    swallows the same errors, which refuse nobody).
    """
    try:
        _consume(session=session, tool_name=tool_name, digest=digest, token=token)
    except ApprovalRequired as refused:
        reason = str(refused.details.get("reason"))
        APPROVALS.labels(f"refused_{reason}").inc()
        if reason == "expired":
            event("arkme.approval.expired")
        else:
            event("arkme.approval.refused", **{"arkme.approval.reason": reason})
        raise


def _consume(*, session: AgentSession, tool_name: str, digest: str, token: object) -> None:
    if isinstance(token, SealedApproval):
        _spend_sealed(session=session, tool_name=tool_name, digest=digest, sealed=token)
        _used()
        return
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise _refused("missing" if not token else "invalid")
    token_hash = token_digest(token)
    now = timezone.now()
    used = ApprovalGrant.objects.filter(
        token_hash=token_hash, session=session, tool_name=tool_name,
        arguments_digest=digest, used_at__isnull=True, expires_at__gt=now,
    ).update(used_at=now)
    if used == 1:
        _used()
        return
    grant = ApprovalGrant.objects.filter(token_hash=token_hash).first()
    if grant is None or grant.session_id != session.pk:
        reason = "invalid"
    elif grant.tool_name != tool_name or grant.arguments_digest != digest:
        reason = "other_arguments"
    elif grant.used_at is not None:
        reason = "used"
    else:
        reason = "expired"
    raise _refused(reason)


def _used() -> None:
    # Counted when the call's transaction commits: a call that fails after the use rolls it
    # back, and the approval is then still unused (approval_consume).
    transaction.on_commit(APPROVALS.labels("used").inc)
    event("arkme.approval.used")


def _refused(reason: str) -> ApprovalRequired:
    return ApprovalRequired(details={"reason": reason})


def approvals_funnel(*, since: datetime, declined: int) -> list[tuple[str, int]]:
    """The approvals asked for since ``since``, and how they ended: used, declined (counted by
    the caller from the audit's roll-up), expired unused, or still open. Read from the
    approvals table, indexed by creation."""
    now = timezone.now()
    asked = ApprovalGrant.objects.filter(created_at__gte=since)
    spent = asked.filter(used_at__isnull=False).count()
    return [
        ("asked", asked.count()),
        ("used", max(0, spent - declined)),
        ("declined", declined),
        ("expired", asked.filter(used_at__isnull=True, expires_at__lte=now).count()),
        ("open", asked.filter(used_at__isnull=True, expires_at__gt=now).count()),
    ]
