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

from arkme.accounts.models import Account, AccountIdentity
from arkme.kernel.cancellation import cancellation_check
from arkme.kernel.errors import ArkmeError, Conflict, ErrorCode, Forbidden, NotFound
from arkme.kernel.ids import token_digest
from arkme.kernel.logs import served_at
from arkme.kernel.signing import RefExpired, RefInvalid
from arkme.kernel.tasking import enqueue
from arkme.kernel.text import duration_text

from .models import (
    ChatMessage,
    Group,
    Invitation,
    InvitationStatus,
    JoinPolicy,
    JoinRequest,
    JoinRequestStatus,
    Membership,
    PrivateChat,
    Role,
)
from .refs import candidate_ref_maker, read_candidate_ref
from .selectors import CandidateView, chats_of, group_and_candidates, group_for_source_ref
from .tasks import deliver_messages
from .vocabulary import Outcome, Scope

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

@dataclass(frozen=True)
class Candidates:
    group: Group
    # Built once as the projection the tool answers with: a call makes fifty.
    candidates: list[CandidateView]
    truncated: bool
    scope: Scope


def group_member_candidates(*, account: AccountIdentity, source_ref: str, query: str | None = None,
                            limit: int = CANDIDATE_LIMIT_DEFAULT) -> Candidates:
    """People from the account's private chats who could join the group: with a query, from
    every chat; without one, from the recent chats only (``scope`` says which), so that an
    unqueried call costs the same whatever the history."""
    query = (query or "").strip() or None
    group, rows = group_and_candidates(account, source_ref, query=query, limit=limit)
    candidate_ref = candidate_ref_maker(account_public_id=account.public_id, group_public_id=group.public_id)
    return Candidates(
        group=group,
        candidates=[{"candidate_ref": candidate_ref(chat), "display_name": name} for chat, name in rows[:limit]],
        truncated=len(rows) > limit,
        scope=Scope.ALL if query else Scope.RECENT,
    )


# --- additions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Judged:
    ref: str
    outcome: Outcome
    person: Account | None = None
    chat: PrivateChat | None = None


def _judge(account: AccountIdentity, group: Group, refs: Sequence[str]) -> list[Judged]:
    """Everything about each ref that can be known without writing, in two statements for
    any number of refs: the chats they name (with both people), and which are members."""
    chat_ids: dict[str, str] = {}
    early: dict[str, Outcome] = {}
    for ref in refs:
        try:
            chat_ids[ref] = read_candidate_ref(ref, account_public_id=account.public_id,
                                               group_public_id=group.public_id)
        except RefExpired:
            early[ref] = Outcome.EXPIRED_REF
        except RefInvalid:
            early[ref] = Outcome.INVALID_REF
    chats = {
        chat.public_id: chat for chat in chats_of(account).select_related("account_low", "account_high")
        .filter(public_id__in=set(chat_ids.values()))
    } if chat_ids else {}
    people = [chat.other(account) for chat in chats.values()]
    members = set(Membership.objects.filter(group=group, account__in=people).values_list("account_id", flat=True)
                  ) if people else set()
    judged = []
    chosen: set[int] = set()  # people an earlier ref of this call already names
    for ref in refs:
        chat = chats.get(chat_ids.get(ref, ""))
        if ref in early:
            judged.append(Judged(ref, early[ref]))
        elif chat is None:
            judged.append(Judged(ref, Outcome.NOT_ELIGIBLE))
        else:
            person = chat.other(account)
            if not person.is_active:
                judged.append(Judged(ref, Outcome.NOT_ELIGIBLE, person))
            elif person.pk in members:
                judged.append(Judged(ref, Outcome.ALREADY_MEMBER, person))
            elif person.pk in chosen:
                judged.append(Judged(ref, Outcome.REPEATED, person, chat))
            else:
                chosen.add(person.pk)
                judged.append(Judged(ref, Outcome.ELIGIBLE, person, chat))
    return judged


# Outside a request and with ARKME_PUBLIC_URL unset (a command), the development address.
FALLBACK_URL = "http://127.0.0.1:8000"


def invitation_link(token: str) -> str:
    base = settings.ARKME_PUBLIC_URL or served_at() or FALLBACK_URL
    return f"{base}/groups/join/{token}"


def _invitation_text(inviter: Account, group: Group, token: str) -> str:
    ttl = duration_text(settings.ARKME_INVITATION_TTL_SECONDS)
    return (f"{inviter.display_name} invites you to join “{group.name}”. Open this private link to ask to join "
            f"(it works once, for you only, for {ttl}): {invitation_link(token)}")


def invitations_ensure(*, group: Group, inviter: AccountIdentity, invitees: Sequence[Judged]) -> None:
    """A pending, unexpired invitation for each invitee, reused where there is one; each new one
    sends its link as a private message, delivered by a task once this transaction commits.
    A constant number of statements for any number of invitees."""
    if not invitees:
        return
    now = timezone.now()
    people = [j.person for j in invitees if j.person is not None]
    Invitation.objects.filter(group=group, invitee__in=people, status=InvitationStatus.PENDING,
                              expires_at__lte=now).update(status=InvitationStatus.REVOKED)
    pending = set(Invitation.objects.filter(group=group, invitee__in=people, status=InvitationStatus.PENDING)
                  .values_list("invitee_id", flat=True))
    fresh = [j for j in invitees if j.person is not None and j.chat is not None and j.person.pk not in pending]
    if not fresh:
        return
    sender = Account.objects.get(pk=inviter.pk)
    tokens = [secrets.token_urlsafe(32) for _ in fresh]
    messages = ChatMessage.objects.bulk_create([
        ChatMessage(chat=j.chat, sender=sender, text=_invitation_text(sender, group, token))
        for j, token in zip(fresh, tokens, strict=True)
    ])
    expires_at = now + timedelta(seconds=settings.ARKME_INVITATION_TTL_SECONDS)
    Invitation.objects.bulk_create([
        Invitation(group=group, invitee=j.person, inviter=sender, token_hash=token_digest(token), message=message,
                   expires_at=expires_at)
        for j, token, message in zip(fresh, tokens, messages, strict=True)
    ])
    message_pks = [message.pk for message in messages]
    transaction.on_commit(lambda: _send(message_pks))


def _send(message_pks: list[int]) -> None:
    try:
        enqueue(deliver_messages, message_pks)
    except ArkmeError:
        # The invitations stand; the periodic redelivery picks the messages up.
        logger.warning("could not enqueue delivery of %d chat message(s)", len(message_pks))


@dataclass(frozen=True)
class MembersAdded:
    group: Group
    results: list[Judged]


def group_members_add(*, account: AccountIdentity, source_ref: str, candidate_refs: Sequence[str]) -> MembersAdded:
    """Judge each ref on its own, then add (open group) or invite (approval group) the eligible.

    Not durable: it runs inside the transaction that uses the human's approval. The group row
    is locked, so concurrent additions to one group are decided one after the other.
    """
    group = group_for_source_ref(account, source_ref)
    with transaction.atomic():
        Group.objects.select_for_update().filter(pk=group.pk).values_list("pk", flat=True).first()
        judged = _judge(account, group, candidate_refs)
        eligible = [j for j in judged if j.outcome == Outcome.ELIGIBLE]
        if group.join_policy == JoinPolicy.OPEN:
            Membership.objects.bulk_create(
                [Membership(group=group, account=j.person) for j in eligible], ignore_conflicts=True)
            done = Outcome.ADDED
        else:
            invitations_ensure(group=group, inviter=account, invitees=eligible)
            done = Outcome.INVITED
        cancellation_check()  # the last step before the commit: nothing for a caller that left
    # A repeated person was acted on once, for the earlier ref: added (so now a member), or
    # invited (one invitation; "already_member" would tell the human they are in the group).
    repeated = Outcome.ALREADY_MEMBER if done == Outcome.ADDED else Outcome.INVITED
    results = [Judged(j.ref, done, j.person, j.chat) if j.outcome == Outcome.ELIGIBLE
               else Judged(j.ref, repeated, j.person, j.chat) if j.outcome == Outcome.REPEATED else j
               for j in judged]
    return MembersAdded(group=group, results=results)


def _names_to_add(judged: Sequence[Judged]) -> list[str]:
    return [j.person.display_name for j in judged if j.outcome == Outcome.ELIGIBLE and j.person is not None]


def members_add_names(*, account: AccountIdentity, source_ref: str, candidate_refs: Sequence[str]) -> list[str]:
    """The display names of the people an add would add or invite, in the call's order."""
    group = group_for_source_ref(account, source_ref)
    return _names_to_add(_judge(account, group, candidate_refs))


def describe_members_add(*, account: AccountIdentity, source_ref: str, candidate_refs: Sequence[str]) -> tuple[str, str]:
    group = group_for_source_ref(account, source_ref)
    judged = _judge(account, group, candidate_refs)
    names = _names_to_add(judged)
    others = len(judged) - len(names) - sum(j.outcome == Outcome.REPEATED for j in judged)
    how = ("They will be added at once." if group.join_policy == JoinPolicy.OPEN
           else "The group needs approval: each gets a private invitation link, and an admin approves their request.")
    body = f"Add {', '.join(names) if names else 'nobody new'} to “{group.name}”. {how}"
    if others:
        body += f" {others} of the people named cannot be added (already members, or not available)."
    return f"Add people to “{group.name}”?", body


# --- invitations and join requests ------------------------------------------------------------

class InvitationUnusable(Conflict):
    """An unknown, used, revoked or expired invitation token. Only the join page meets it, and
    shows its message to the person who followed the link."""


def invitation_check_usable(invitation: Invitation) -> None:
    if invitation.status != InvitationStatus.PENDING:
        raise InvitationUnusable("This invitation link has already been used.")
    if invitation.expires_at <= timezone.now():
        raise InvitationUnusable("This invitation link has expired.")


def invitation_for_token(token: str, *, invitee: AccountIdentity, lock: bool = False) -> Invitation:
    """The invitation a token names, for its invitee alone: ``InvitationUnusable`` when it names
    none, ``Forbidden`` for anyone else. ``lock`` takes its row (and its group's) for update."""
    invitations = (Invitation.objects.select_for_update().select_related("group") if lock
                   else Invitation.objects.select_related("group", "invitee"))
    invitation = invitations.filter(token_hash=token_digest(token)).first()
    if invitation is None:
        raise InvitationUnusable("This invitation link is not valid.")
    if invitation.invitee_id != invitee.pk:
        raise Forbidden("This invitation is for someone else.")
    return invitation


def invitation_accept(*, token: str, account: Account) -> JoinRequest | None:
    """Turn the invitee's invitation into a join request. None if they are already a member."""
    with transaction.atomic(durable=True):
        invitation = invitation_for_token(token, invitee=account, lock=True)
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
    with transaction.atomic(durable=True):
        request = (JoinRequest.objects.select_for_update().select_related("group", "account")
                   .filter(pk=request_id).first())
        if request is None:
            raise NotFound("No such join request.", code=ErrorCode.UNKNOWN_JOIN_REQUEST)
        if request.status != JoinRequestStatus.PENDING:
            raise Conflict(f"This request was already {request.status}.", code=ErrorCode.JOIN_REQUEST_DECIDED)
        request.status = JoinRequestStatus.APPROVED if approve else JoinRequestStatus.DECLINED
        request.decided_at, request.decided_by = timezone.now(), by[:150]
        request.save(update_fields=["status", "decided_at", "decided_by"])
        if approve:
            membership_ensure(group=request.group, account=request.account)
    return request
