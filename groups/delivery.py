"""Delivering chat messages (invitation links) into their private chat: what the delivery
tasks do. Below both the services that enqueue it and the task module that runs it."""
from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from .models import ChatMessage, PrivateChat


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
