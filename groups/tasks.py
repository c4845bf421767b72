"""Celery tasks of the group domain: delivering invitation messages."""
from __future__ import annotations

from celery import shared_task
from django.db import DatabaseError

from .delivery import message_deliver, messages_redeliver


@shared_task(name="groups.deliver_messages", acks_late=True, autoretry_for=(DatabaseError,),
             retry_backoff=True, retry_backoff_max=300, max_retries=8)
def deliver_messages(message_pks: list[int]) -> int:
    """Deliver the messages one call sent (idempotent per message). Returns how many."""
    return sum(message_deliver(message_pk=pk) for pk in message_pks)


@shared_task(name="groups.redeliver_messages")
def redeliver_messages() -> int:
    return messages_redeliver()
