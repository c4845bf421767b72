"""Standing grants: a human's approval with the ``session`` scope also covers later calls of
the same tool in the same session on the same target, until it expires
(``ARKME_STANDING_GRANT_SECONDS``), the session ends, or it is revoked.

A grant is live while it is neither expired nor revoked and its session is open. Session
close is checked where a grant is used (a closed session answers every call ``404`` anyway,
and lists no live grants), so closing a session writes nothing here; its grants simply stop
counting. Revocation, by staff or by the account, is recorded in the approval record.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from arkme.accounts.models import Account
from arkme.kernel.errors import ApprovalRequired, NotFound

from .approval_record import approval_recorded
from .approvals import ONCE_ONLY, Offer, SealedApproval, approval_consume, approval_expired_recorded
from .calls import Call
from .models import ApprovalDecision, ApprovalScope, ApprovalVia, StandingGrant

_WITH_SESSION = (*ONCE_ONLY.scopes, str(ApprovalScope.SESSION))


@dataclass(frozen=True)
class Allowed:
    """What let a pre-execute call run: the approval it used, or the standing grant that covered it."""

    approval: int | None = None
    standing_grant: int | None = None


def call_offer(call: Call) -> Offer:
    """The scopes this call's card offers, and the target a standing grant from it would cover."""
    target = call.grant_target
    return Offer(scopes=_WITH_SESSION, target=target) if target else ONCE_ONLY


def _live(queryset: QuerySet[StandingGrant]) -> QuerySet[StandingGrant]:
    return queryset.filter(revoked_at__isnull=True, expires_at__gt=timezone.now(), session__closed_at__isnull=True)


def standing_grant_covering(call: Call, *, lock: bool = False) -> StandingGrant | None:
    """The live grant covering this call (same session, tool and target), or None. ``lock``:
    inside the call's transaction, so a revocation waits for the call, or the call for it."""
    target = call.grant_target
    if not target or call.session.closed_at is not None:
        return None
    grants = _live(StandingGrant.objects.filter(session=call.session, tool_name=call.known.metadata.name,
                                                target=target))
    if lock:
        grants = grants.select_for_update(of=("self",))  # the grant's row, not its session's
    return grants.order_by("-id").first()


def call_allowed(call: Call, *, tool_call: int | None) -> Allowed:
    """Let a pre-execute call run, inside its transaction: a call presenting no approval runs
    under a live standing grant; otherwise its approval is used up (opening a standing grant
    when used with the ``session`` scope). Each use is recorded, linked to ``tool_call`` (the
    audit row); raises ``approval_required`` saying why the call may not run."""
    tool_name = call.known.metadata.name
    session = call.session
    if call.approval is None:
        grant = standing_grant_covering(call, lock=True)
        if grant is not None:
            approval_recorded(decision=ApprovalDecision.Kind.USED, via=ApprovalVia.SYSTEM,
                              session_public_id=session.public_id, tool_name=tool_name, standing_grant=grant,
                              tool_call=tool_call)
            return Allowed(standing_grant=grant.pk)
    # A sealed answer is stored only now, with what its card offered; a token's offer was
    # stored when it was issued.
    offer = call_offer(call) if isinstance(call.approval, SealedApproval) else None
    used = approval_consume(session=session, tool_name=tool_name, digest=call.digest, token=call.approval,
                            offer=offer, scope=call.scope)
    opened = None
    if used.scope == ApprovalScope.SESSION:
        opened = StandingGrant.objects.create(
            session=session, tool_name=tool_name, target=used.target, approval_id=used.pk,
            expires_at=timezone.now() + timedelta(seconds=settings.ARKME_STANDING_GRANT_SECONDS))
    if used.via is not ApprovalVia.PAGE:  # the page records its own approval when the human gives it
        approval_recorded(decision=ApprovalDecision.Kind.APPROVED, via=used.via, session_public_id=session.public_id,
                          tool_name=tool_name, approval=used.pk, standing_grant=opened)
    approval_recorded(decision=ApprovalDecision.Kind.USED, via=used.via, session_public_id=session.public_id,
                      tool_name=tool_name, approval=used.pk, standing_grant=opened, tool_call=tool_call)
    return Allowed(approval=used.pk, standing_grant=opened.pk if opened is not None else None)


def call_refusal_recorded(call: Call, refused: ApprovalRequired) -> None:
    """After the call's transaction rolled back: keep an expired approval's expiry."""
    if refused.details.get("reason") == "expired":
        approval_expired_recorded(session=call.session, tool_name=call.known.metadata.name, token=call.approval)


def standing_grants_live(account: Account) -> QuerySet[StandingGrant]:
    """The account's live standing grants, newest first."""
    return _live(StandingGrant.objects.filter(session__account=account)).select_related("session__client")


def standing_grant_revoke(grant: StandingGrant, *, via: ApprovalVia) -> bool:
    """End a grant now; False when it had already been revoked. Recorded as ``revoked``."""
    with transaction.atomic():
        revoked = StandingGrant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_via=via)
        if revoked:
            approval_recorded(decision=ApprovalDecision.Kind.REVOKED, via=via,
                              session_public_id=grant.session.public_id, tool_name=grant.tool_name,
                              approval=grant.approval_id, standing_grant=grant)
    return bool(revoked)


def standing_grant_revoke_by_account(account: Account, grant_id: int) -> None:
    """The account ends one of its own grants; any other id (another account's, or none) is
    ``404``, the same for both, so the page tells nobody whose grants exist."""
    grant = StandingGrant.objects.select_related("session").filter(pk=grant_id, session__account=account).first()
    if grant is None:
        raise NotFound("No such standing grant.")
    standing_grant_revoke(grant, via=ApprovalVia.ACCOUNT)
