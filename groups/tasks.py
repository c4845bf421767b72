"""Celery tasks of the group domain: delivering invitation messages."""
from __future__ import annotations

from celery import shared_task
from django.db import DatabaseError

from .services import message_deliver, messages_redeliver


@shared_task(name="groups.deliver_message", acks_late=True, autoretry_for=(DatabaseError,),
             retry_backoff=True, retry_backoff_max=300, max_retries=8)
def deliver_message(message_pk: int) -> bool:
    return message_deliver(message_pk=message_pk)


@shared_task(name="groups.redeliver_messages")
def redeliver_messages() -> int:
    return messages_redeliver()
