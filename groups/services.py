"""Write services of the group domain: memberships, additions, invitations, join requests."""
from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.errors import Conflict, Forbidden, NotFound
from arkme.ids import token_digest
from arkme.models import Account, AccountIdentity

from .models import (
    ChatMessage, Group, Invitation, InvitationStatus, JoinPolicy, JoinRequest, JoinRequestStatus, Membership,
    PrivateChat, Role,
)
from .refs import RefExpired, RefInvalid, candidate_ref_maker, read_candidate_ref
from .selectors import candidate_chats, chats_of, group_for_source_ref, group_view

logger = logging.getLogger(__name__)
CANDIDATE_LIMIT_DEFAULT = 50


def membership_ensure(*, group: Group, account: Account, role: str = Role.MEMBER) -> tuple[Membership, bool]:
    """The account's membership of the group, created if missing; concurrent callers get one row."""
    try:
        with transaction.atomic():
            return Membership.objects.get_or_create(group=group, account=account, defaults={"role": role})
    except IntegrityError:
        return Membership.objects.get(group=group, account=account), False


def private_chat_ensure(*, a: Account, b: Account) -> PrivateChat:
    low, high = sorted((a, b), key=lambda acc: acc.pk)
    if low.pk == high.pk:
        raise ValueError("a private chat needs two different accounts")
    chat, _ = PrivateChat.objects.get_or_create(
        account_low=low, account_high=high, defaults={"last_activity_at": timezone.now()}
    )
    return chat


# --- candidates ------------------------------------------------------------------------------

def group_member_candidates(*, account: AccountIdentity, source_ref: str, query: str | None = None,
                            limit: int = CANDIDATE_LIMIT_DEFAULT) -> dict:
    group = group_for_source_ref(account, source_ref)
    rows = candidate_chats(account, group, query=(query or "").strip() or None, limit=limit)
    candidate_ref = candidate_ref_maker(account_public_id=account.public_id, group_public_id=group.public_id)
    return {
        "group": group_view(group),
        "candidates": [
            {"candidate_ref": candidate_ref(row["public_id"]), "display_name": row["other_name"]}
            for row in rows[:limit]
        ],
        "truncated": len(rows) > limit,
    }


# --- additions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Judged:
    ref: str
    outcome: str
    person: Account | None = None
    chat: PrivateChat | None = None


def _judge(account: Account, group: Group, ref: str) -> Judged:
    """Everything about one ref that can be known without writing."""
    try:
        handle = read_candidate_ref(ref, account_public_id=account.public_id, group_public_id=group.public_id)
    except RefExpired:
        return Judged(ref, "expired_ref")
    except RefInvalid:
        return Judged(ref, "invalid_ref")
    chat = chats_of(account).select_related("account_low", "account_high").filter(public_id=handle.chat_public_id).first()
    if chat is None:
        return Judged(ref, "not_eligible")
    person = chat.other(account)
    if not person.is_active:
        return Judged(ref, "not_eligible", person)
    if Membership.objects.filter(group=group, account=person).exists():
        return Judged(ref, "already_member", person)
    return Judged(ref, "eligible", person, chat)


def invitation_link(token: str) -> str:
    return f"{settings.ARKME_PUBLIC_URL}/groups/join/{token}"


def invitation_ensure(*, group: Group, inviter: Account, invitee: Account, chat: PrivateChat) -> Invitation:
    """A pending, unexpired invitation for the invitee, reused if there is one; a new one
    sends its link as a private message, delivered by a task once this transaction commits."""
    now = timezone.now()
    Invitation.objects.filter(group=group, invitee=invitee, status=InvitationStatus.PENDING,
                              expires_at__lte=now).update(status=InvitationStatus.REVOKED)
    existing = Invitation.objects.filter(group=group, invitee=invitee, status=InvitationStatus.PENDING).first()
    if existing is not None:
        return existing
    token = secrets.token_urlsafe(32)
    message = ChatMessage.objects.create(
        chat=chat, sender=inviter,
        text=f"{inviter.display_name} invites you to join “{group.name}”. Open this private link to ask to join "
             f"(it works once, for you only, for 7 days): {invitation_link(token)}",
    )
    invitation = Invitation.objects.create(
        group=group, invitee=invitee, inviter=inviter, token_hash=token_digest(token), message=message,
        expires_at=now + timedelta(seconds=settings.ARKME_INVITATION_TTL_SECONDS),
    )
    transaction.on_commit(lambda: _send(message.pk))
    return invitation


def _send(message_pk: int) -> None:
    from arkme.tasking import enqueue

    from .tasks import deliver_message

    try:
        enqueue(deliver_message, message_pk)
    except Exception:
        # The invitation stands; the periodic redelivery picks the message up.
        logger.warning("could not enqueue delivery of chat message %s", message_pk, exc_info=True)


def group_members_add(*, account: Account, source_ref: str, candidate_refs: Sequence[str]) -> dict:
    group = group_for_source_ref(account, source_ref)
    results = []
    for ref in candidate_refs:
        judged = _judge(account, group, ref)
        outcome = judged.outcome
        if outcome == "eligible":
            # Each ref on its own: one failing does not undo the others.
            if group.join_policy == JoinPolicy.OPEN:
                _, created = membership_ensure(group=group, account=judged.person)
                outcome = "added" if created else "already_member"
            else:
                try:
                    with transaction.atomic():
                        invitation_ensure(group=group, inviter=account, invitee=judged.person, chat=judged.chat)
                except IntegrityError:
                    pass  # a concurrent add invited them a moment ago: that invitation stands
                outcome = "invited"
        result = {"candidate_ref": ref, "outcome": outcome}
        if judged.person is not None:
            result["display_name"] = judged.person.display_name
        results.append(result)
    return {"group": group_view(group, fresh=True), "results": results}


def describe_members_add(*, account: Account, source_ref: str, candidate_refs: Sequence[str]) -> tuple[str, str]:
    group = group_for_source_ref(account, source_ref)
    judged = [_judge(account, group, ref) for ref in candidate_refs]
    names = [j.person.display_name for j in judged if j.outcome == "eligible"]
    others = len(judged) - len(names)
    how = ("They will be added at once." if group.join_policy == JoinPolicy.OPEN
           else "The group needs approval: each gets a private invitation link, and an admin approves their request.")
    body = f"Add {', '.join(names) if names else 'nobody new'} to “{group.name}”. {how}"
    if others:
        body += f" {others} of the people named cannot be added (already members, or not available)."
    return f"Add people to “{group.name}”?", body


# --- delivery, invitations and join requests ------------------------------------------------

def message_deliver(*, message_pk: int) -> bool:
    """Make a chat message visible in its chat. Idempotent. True when this call delivered it."""
    with transaction.atomic():
        message = ChatMessage.objects.select_for_update().filter(pk=message_pk).first()
        if message is None or message.delivered_at is not None:
            return False
        now = timezone.now()
        message.delivered_at = now
        message.save(update_fields=["delivered_at"])
        PrivateChat.objects.filter(pk=message.chat_id).update(last_activity_at=now)
    return True


def messages_redeliver(*, older_than: timedelta = timedelta(minutes=1)) -> int:
    pending = ChatMessage.objects.filter(delivered_at__isnull=True, created_at__lt=timezone.now() - older_than)
    return sum(message_deliver(message_pk=pk) for pk in pending.values_list("pk", flat=True))


class InvitationUnusable(Exception):
    """An unknown, used, revoked or expired invitation token."""


def invitation_check_usable(invitation: Invitation) -> None:
    if invitation.status != InvitationStatus.PENDING:
        raise InvitationUnusable("This invitation link has already been used.")
    if invitation.expires_at <= timezone.now():
        raise InvitationUnusable("This invitation link has expired.")


def invitation_for_token(token: str) -> Invitation:
    invitation = Invitation.objects.select_related("group", "invitee").filter(token_hash=token_digest(token)).first()
    if invitation is None:
        raise InvitationUnusable("This invitation link is not valid.")
    return invitation


def invitation_accept(*, token: str, account: Account) -> JoinRequest | None:
    """Turn the invitee's invitation into a join request. None if they are already a member."""
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().select_related("group").filter(token_hash=token_digest(token)).first()
        if invitation is None:
            raise InvitationUnusable("This invitation link is not valid.")
        if invitation.invitee_id != account.pk:
            raise Forbidden("This invitation is for someone else.")
        invitation_check_usable(invitation)
        invitation.status, invitation.used_at = InvitationStatus.ACCEPTED, timezone.now()
        invitation.save(update_fields=["status", "used_at"])
        if Membership.objects.filter(group=invitation.group, account=account).exists():
            return None
        request, _ = JoinRequest.objects.get_or_create(
            group=invitation.group, account=account, status=JoinRequestStatus.PENDING,
            defaults={"invitation": invitation},
        )
    return request


def join_request_decide(*, request_id: int, approve: bool, by: str) -> JoinRequest:
    with transaction.atomic():
        request = JoinRequest.objects.select_for_update().select_related("group", "account").filter(pk=request_id).first()
        if request is None:
            raise NotFound("No such join request.")
        if request.status != JoinRequestStatus.PENDING:
            raise Conflict(f"This request was already {request.status}.", code="join_request_decided")
        request.status = JoinRequestStatus.APPROVED if approve else JoinRequestStatus.DECLINED
        request.decided_at, request.decided_by = timezone.now(), by[:150]
        request.save(update_fields=["status", "decided_at", "decided_by"])
        if approve:
            membership_ensure(group=request.group, account=request.account)
    return request
