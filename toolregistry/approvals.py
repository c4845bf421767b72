"""Pre-execute approvals: single use, expiring, bound to session, tool and exact arguments."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.kernel.errors import ApprovalRequired, InvalidRequest
from arkme.kernel.ids import token_digest
from arkme.kernel.metrics import APPROVALS
from arkme.kernel.tracing import event

from .approval_record import approval_recorded
from .models import ApprovalDecision, ApprovalGrant, ApprovalScope, ApprovalVia

TOKEN_PREFIX = "apv_"  # noqa: S105 - a prefix, not a secret


@dataclass(frozen=True)
class IssuedApproval:
    token: str
    expires_at: datetime
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class SealedApproval:
    """A human's answer to an approval question that travelled sealed (MCP's ``requestState``,
    signed and bound to client, session, tool and arguments): a random nonce and when it was
    asked, and the scope the human chose. Nothing is stored when the question is asked; the
    ledger records the nonce when the answer is used, and its uniqueness makes the answer
    single use."""

    nonce: str
    asked_at: datetime
    scope: str = ApprovalScope.ONCE

    @property
    def token_hash(self) -> str:
        return token_digest("sealed:" + self.nonce)


@dataclass(frozen=True)
class Offer:
    """What the card of a call offers: its scopes, and the target a standing grant would cover."""

    scopes: tuple[str, ...]
    target: str


ONCE_ONLY = Offer(scopes=(str(ApprovalScope.ONCE),), target="")


@dataclass(frozen=True)
class UsedApproval:
    """An approval a call used: its row, the scope it was used with, and where it was heard."""

    pk: int
    scope: str
    target: str
    via: ApprovalVia


def _spend_sealed(*, session: AgentSession, tool_name: str, digest: str, sealed: SealedApproval,
                  offer: Offer) -> ApprovalGrant:
    now = timezone.now()
    expires_at = sealed.asked_at + timedelta(seconds=settings.ARKME_APPROVAL_TTL_SECONDS)
    if expires_at <= now:
        raise _refused("expired")
    scope = _scope_chosen(sealed.scope, offer.scopes)
    try:
        with transaction.atomic():  # a savepoint: a replay fails here and the caller's transaction lives on
            return ApprovalGrant.objects.create(
                session=session, tool_name=tool_name, arguments_digest=digest, token_hash=sealed.token_hash,
                expires_at=expires_at, used_at=now, scope=scope, scopes_offered=list(offer.scopes),
                target=offer.target)
    except IntegrityError:
        raise _refused("used") from None


def approval_void(*, session: AgentSession, tool_name: str, digest: str, sealed: SealedApproval) -> int | None:
    """The human said no: the answer is spent, so replaying the question cannot turn it into a
    yes. Returns the spent approval's row (None when it was already spent or expired)."""
    try:
        return _spend_sealed(session=session, tool_name=tool_name, digest=digest,
                             sealed=SealedApproval(nonce=sealed.nonce, asked_at=sealed.asked_at),
                             offer=ONCE_ONLY).pk
    except ApprovalRequired:
        return None  # already spent or expired: unusable either way


def approval_issue(*, session: AgentSession, tool_name: str, digest: str, offer: Offer | None = None,
                   card: dict[str, Any] | None = None, via: ApprovalVia = ApprovalVia.HOST) -> IssuedApproval:
    """A new approval for the card the human is shown, recorded as ``asked``. ``offer``: its
    scopes and target (``once`` alone when not given)."""
    offer = offer or ONCE_ONLY
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(seconds=settings.ARKME_APPROVAL_TTL_SECONDS)
    grant = ApprovalGrant.objects.create(
        session=session, tool_name=tool_name, arguments_digest=digest,
        token_hash=token_digest(token), expires_at=expires_at,
        scopes_offered=list(offer.scopes), target=offer.target, card=card or {},
    )
    approval_recorded(decision=ApprovalDecision.Kind.ASKED, via=via, session_public_id=session.public_id,
                      tool_name=tool_name, approval=grant)
    APPROVALS.labels("asked").inc()
    event("arkme.approval.asked")
    return IssuedApproval(token=token, expires_at=expires_at, scopes=offer.scopes)


def approval_consume(*, session: AgentSession, tool_name: str, digest: str, token: object,
                     offer: Offer | None = None, scope: str | None = None) -> UsedApproval:
    """Use the approval up, or raise ``403 approval_required`` saying why it does not count
    (``400 invalid_request`` for a ``scope`` its card did not offer).

    The use is one conditional UPDATE, so two calls racing with one token cannot both win.
    Called inside the call's transaction: if the call fails, the approval is still unused.
    ``offer``: the call's scopes and target, for a sealed answer (a token's were stored when
    it was issued). A refusal is counted here, where it leaves for the caller
    (``approval_void`` makes and swallows the same errors, which refuse nobody).
    """
    try:
        return _consume(session=session, tool_name=tool_name, digest=digest, token=token, offer=offer, scope=scope)
    except ApprovalRequired as refused:
        reason = str(refused.details.get("reason"))
        APPROVALS.labels(f"refused_{reason}").inc()
        if reason == "expired":
            event("arkme.approval.expired")
        else:
            event("arkme.approval.refused", **{"arkme.approval.reason": reason})
        raise


def _consume(*, session: AgentSession, tool_name: str, digest: str, token: object, offer: Offer | None,
             scope: str | None) -> UsedApproval:
    if isinstance(token, SealedApproval):
        spent = _spend_sealed(session=session, tool_name=tool_name, digest=digest, sealed=token,
                              offer=offer or ONCE_ONLY)
        _used()
        return UsedApproval(pk=spent.pk, scope=spent.scope, target=spent.target, via=ApprovalVia.MCP_FORM)
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise _refused("missing" if not token else "invalid")
    now = timezone.now()
    grant = ApprovalGrant.objects.filter(token_hash=token_digest(token)).first()
    if grant is None or grant.session_id != session.pk:
        raise _refused("invalid")
    if grant.tool_name != tool_name or grant.arguments_digest != digest:
        raise _refused("other_arguments")
    chosen = _scope_chosen(scope or grant.scope, grant.scopes_offered)
    used = ApprovalGrant.objects.filter(pk=grant.pk, used_at__isnull=True, expires_at__gt=now).update(
        used_at=now, scope=chosen)
    if used != 1:
        raise _refused("used" if grant.used_at is not None or grant.expires_at > now else "expired")
    _used()
    via = ApprovalVia.PAGE if grant.page_handle_hash else ApprovalVia.HOST
    return UsedApproval(pk=grant.pk, scope=chosen, target=grant.target, via=via)


def _scope_chosen(scope: str, offered: list[str] | tuple[str, ...]) -> str:
    """The scope an approval is used with: ``once``, or one its card offered."""
    if scope == ApprovalScope.ONCE:
        return ApprovalScope.ONCE
    if scope not in offered:
        raise InvalidRequest("This approval's card did not offer that scope.",
                             details={"fields": ["scope"], "scopes": list(offered or [ApprovalScope.ONCE])})
    return scope


def approval_expired_recorded(*, session: AgentSession, tool_name: str, token: object) -> None:
    """Keep the expiry of an approval a call was refused for, once per approval. Called after
    the call's transaction rolled back (a row written inside it would go with it)."""
    approval = None
    if isinstance(token, str) and token.startswith(TOKEN_PREFIX) and len(token) <= 100:
        approval = ApprovalGrant.objects.filter(token_hash=token_digest(token), session=session).first()
        if approval is None or approval.decisions.filter(decision=ApprovalDecision.Kind.EXPIRED).exists():
            return
    approval_recorded(decision=ApprovalDecision.Kind.EXPIRED, via=ApprovalVia.SYSTEM,
                      session_public_id=session.public_id, tool_name=tool_name, approval=approval)


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
