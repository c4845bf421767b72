"""Write services of the group domain."""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.models import Account

from .models import Group, Membership, PrivateChat, Role


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
