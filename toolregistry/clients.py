"""DSH client keys: issued once, stored only as a hash, revocable."""
from __future__ import annotations

import secrets
from typing import Iterable

from django.db import transaction
from django.utils import timezone

from arkme.errors import InvalidRequest, NotFound
from arkme.ids import token_digest

from .catalog import CATALOG
from .models import DshClient

KEY_PREFIX = "dsh_"


def dsh_client_create(*, name: str, profiles: Iterable[str] = ()) -> tuple[DshClient, str]:
    """A new client and its key; the key is returned once and never stored."""
    profiles = list(dict.fromkeys(profiles))
    unknown = [p for p in profiles if p not in CATALOG.profiles]
    if unknown:
        raise InvalidRequest(f"Unknown profile: {', '.join(unknown)}.", code="unknown_profile")
    name = name.strip()
    if not name:
        raise InvalidRequest("A client needs a name.")
    if DshClient.objects.filter(name=name).exists():
        raise InvalidRequest("A client with that name exists.", code="client_exists")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    client = DshClient.objects.create(
        name=name, key_prefix=key[:10], key_hash=token_digest(key), profiles=profiles
    )
    return client, key


def dsh_client_rotate(*, name: str) -> tuple[DshClient, str]:
    """Issue a new key for a client, invalidating the old one."""
    with transaction.atomic():
        client = DshClient.objects.select_for_update().filter(name=name).first()
        if client is None:
            raise NotFound("No such client.")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        client.key_prefix, client.key_hash, client.revoked_at = key[:10], token_digest(key), None
        client.save(update_fields=["key_prefix", "key_hash", "revoked_at"])
    return client, key


def dsh_client_revoke(*, name: str) -> DshClient:
    client = DshClient.objects.filter(name=name).first()
    if client is None:
        raise NotFound("No such client.")
    if client.revoked_at is None:
        client.revoked_at = timezone.now()
        client.save(update_fields=["revoked_at"])
    return client


def client_for_key(key: str) -> DshClient | None:
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    return DshClient.objects.filter(key_hash=token_digest(key), revoked_at__isnull=True).first()
