"""Pre-execute approvals: single use, expiring, bound to session, tool and exact arguments."""
from __future__ import annotations

import enum
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from arkme.accounts.models import AccountIdentity
from arkme.conversations.models import AgentSession
from arkme.kernel.errors import (
    ApprovalDeclined,
    ApprovalPageRequired,
    ApprovalPending,
    ApprovalRequired,
    ErrorCode,
    Forbidden,
    InvalidRequest,
    NotFound,
)
from arkme.kernel.ids import token_digest
from arkme.kernel.metrics import APPROVALS
from arkme.kernel.tracing import event

from .approval_record import approval_recorded
from .models import ApprovalDecision, ApprovalGrant, ApprovalScope, ApprovalVia

TOKEN_PREFIX = "apv_"  # noqa: S105 - a prefix, not a secret


class ApprovalStatus(enum.StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"
    USED = "used"


@dataclass(frozen=True)
class IssuedApproval:
    token: str
    expires_at: datetime
    scopes: tuple[str, ...]
    # The opaque handle of the approval page's address, when the approval is taken there.
    page_handle: str | None = None


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
class OnPage:
    """A page approval presented by its row: the MCP door found it for the call (by the handle
    of the URL it sent, or as the approved one for these exact arguments); the ledger holds it
    to the same session, tool, arguments, answer and single use as a token."""

    pk: int


@dataclass(frozen=True)
class PageRequired:
    """No approval a client that cannot open a URL could present: the ledger refuses the call
    with ``approval_page_required`` and the page's address, in the pipeline like any refusal."""

    url: str


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
                   card: dict[str, Any] | None = None, via: ApprovalVia = ApprovalVia.HOST,
                   page: bool = False) -> IssuedApproval:
    """A new approval for the card the human is shown, recorded as ``asked``. ``offer``: its
    scopes and target (``once`` alone when not given). ``page``: taken on Arkme's page, so it
    stays pending until the session's account answers there; the page's handle is returned
    once, and only its digest is stored."""
    offer = offer or ONCE_ONLY
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    handle = secrets.token_urlsafe(32) if page else None
    expires_at = timezone.now() + timedelta(seconds=settings.ARKME_APPROVAL_TTL_SECONDS)
    grant = ApprovalGrant.objects.create(
        session=session, tool_name=tool_name, arguments_digest=digest,
        token_hash=token_digest(token), expires_at=expires_at,
        scopes_offered=list(offer.scopes), target=offer.target, card=card or {},
        page_handle_hash=token_digest(handle) if handle else None,
    )
    approval_recorded(decision=ApprovalDecision.Kind.ASKED, via=via, session_public_id=session.public_id,
                      tool_name=tool_name, approval=grant)
    APPROVALS.labels("asked").inc()
    event("arkme.approval.asked", **{"arkme.approval.page": page})
    return IssuedApproval(token=token, expires_at=expires_at, scopes=offer.scopes, page_handle=handle)


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
    except (ApprovalRequired, ApprovalPending, ApprovalDeclined, ApprovalPageRequired) as refused:
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
    now = timezone.now()
    grant = _presented(token)
    if grant is None or grant.session_id != session.pk:
        raise _refused("invalid")
    if grant.tool_name != tool_name or grant.arguments_digest != digest:
        raise _refused("other_arguments")
    chosen = _scope_chosen(scope or grant.scope, grant.scopes_offered)
    # A page approval counts once its account approved it there, and never once declined: in
    # the same statement, so an answer on the page and a use cannot pass each other.
    used = ApprovalGrant.objects.filter(
        Q(page_handle_hash__isnull=True) | Q(approved_at__isnull=False),
        pk=grant.pk, used_at__isnull=True, declined_at__isnull=True, expires_at__gt=now,
    ).update(used_at=_not_before_approval(now), scope=chosen)
    if used != 1:
        grant.refresh_from_db()
        status = _status_of(grant, now)
        if status is ApprovalStatus.DECLINED:
            raise ApprovalDeclined(details={"reason": "declined"})
        if status is ApprovalStatus.PENDING:
            raise ApprovalPending(details={"reason": "pending"})
        raise _refused("used" if status is ApprovalStatus.USED else "expired")
    _used()
    via = ApprovalVia.PAGE if grant.page_handle_hash else ApprovalVia.HOST
    return UsedApproval(pk=grant.pk, scope=chosen, target=grant.target, via=via)


def _presented(token: object) -> ApprovalGrant | None:
    """The approval a call presents: by its token, or (``OnPage``) by the row of a page
    approval the MCP door found for this very call."""
    if isinstance(token, PageRequired):
        raise ApprovalPageRequired(details={"reason": "page_required", "url": token.url})
    if isinstance(token, OnPage):
        return ApprovalGrant.objects.filter(pk=token.pk, page_handle_hash__isnull=False).first()
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise _refused("missing" if not token else "invalid")
    return ApprovalGrant.objects.filter(token_hash=token_digest(token)).first()


def _not_before_approval(now: datetime) -> Greatest:
    """When the approval was used: ``now``, or its approval's time if that is later. A use that
    waited on the row while the page's answer committed was timed before it; the record still
    reads approved, then used."""
    return Greatest(Value(now), Coalesce(F("approved_at"), Value(now)))


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


# --- Approvals taken on Arkme's page ------------------------------------------------------

def approval_status_of(grant: ApprovalGrant) -> ApprovalStatus:
    """Where this approval stands now."""
    return _status_of(grant, timezone.now())


def _status_of(grant: ApprovalGrant, now: datetime, *, session_closed: bool = False) -> ApprovalStatus:
    if grant.used_at is not None:
        return ApprovalStatus.USED
    if grant.declined_at is not None:
        return ApprovalStatus.DECLINED
    if grant.expires_at <= now or session_closed:
        return ApprovalStatus.EXPIRED
    if grant.page_handle_hash and grant.approved_at is None:
        return ApprovalStatus.PENDING
    return ApprovalStatus.APPROVED


def _unknown() -> NotFound:
    return NotFound("No such approval in this session.", code=ErrorCode.UNKNOWN_APPROVAL)


def approval_status(*, session: AgentSession, token: str) -> ApprovalStatus:
    """Where an approval of this session stands, so a host can wait for the page's answer
    without calling the tool. Another session's approval is ``404`` like an unknown one. An
    approval not taken on the page counts as approved from the start, until used or expired."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise _unknown()
    grant = ApprovalGrant.objects.filter(token_hash=token_digest(token), session=session).first()
    if grant is None:
        raise _unknown()
    return _status_of(grant, timezone.now())


@dataclass(frozen=True)
class PageApproval:
    """An approval as its page shows it: the row (its card and session) and where it stands."""

    approval: ApprovalGrant
    status: ApprovalStatus

    @property
    def details(self) -> dict[str, Any]:
        details = self.approval.card.get("details") if isinstance(self.approval.card, dict) else None
        return details if isinstance(details, dict) else {}


def _page_grant(handle: str, account: AccountIdentity, rows: QuerySet[ApprovalGrant]) -> ApprovalGrant:
    """Fetch-and-authorise: the approval a page handle names, for the session's own account
    alone (``Forbidden`` for anyone else, ``NotFound`` for a handle that names none)."""
    if not handle or len(handle) > 100:
        raise _unknown()
    grant = rows.select_related("session").filter(page_handle_hash=token_digest(handle)).first()
    if grant is None:
        raise _unknown()
    if grant.session.account_id != account.pk:
        raise Forbidden("This approval belongs to someone else.")
    return grant


def approval_for_page(*, handle: str, account: AccountIdentity) -> PageApproval:
    grant = _page_grant(handle, account, ApprovalGrant.objects.all())
    status = _status_of(grant, timezone.now(), session_closed=grant.session.closed_at is not None)
    return PageApproval(approval=grant, status=status)


def approval_decide(*, handle: str, account: AccountIdentity, approve: bool,
                    scope: str = ApprovalScope.ONCE) -> PageApproval:
    """The account's answer on the page. Only a pending approval takes it: an approval already
    answered, used or expired (a replayed form) is returned as it stands, unchanged. ``scope``
    ``session`` holds only where the card offered it."""
    with transaction.atomic():
        grant = _page_grant(handle, account, ApprovalGrant.objects.select_for_update(of=("self",)))
        now = timezone.now()
        status = _status_of(grant, now, session_closed=grant.session.closed_at is not None)
        if status is not ApprovalStatus.PENDING:
            return PageApproval(approval=grant, status=status)
        if approve:
            offered = grant.scopes_offered if isinstance(grant.scopes_offered, list) else []
            grant.approved_at = now
            grant.scope = ApprovalScope.SESSION if scope == ApprovalScope.SESSION and scope in offered else ApprovalScope.ONCE
            grant.save(update_fields=["approved_at", "scope"])
        else:
            grant.declined_at = now
            grant.save(update_fields=["declined_at"])
        kind = ApprovalDecision.Kind.APPROVED if approve else ApprovalDecision.Kind.DECLINED
        approval_recorded(decision=kind, via=ApprovalVia.PAGE, session_public_id=grant.session.public_id,
                          tool_name=grant.tool_name, approval=grant)
    APPROVALS.labels("page_approved" if approve else "declined").inc()
    event("arkme.approval.decided", **{"arkme.approval.decision": str(kind), "arkme.approval.via": "page"})
    return PageApproval(approval=grant, status=ApprovalStatus.APPROVED if approve else ApprovalStatus.DECLINED)
