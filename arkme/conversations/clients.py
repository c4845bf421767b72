"""DSH client keys: issued once, stored only as a hash, revocable."""
from __future__ import annotations

import secrets
from typing import Iterable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.kernel.errors import Conflict, ErrorCode, InvalidRequest, NotAuthenticated, NotFound
from arkme.kernel.ids import token_digest
from arkme.kernel.profiles import Profile

from .models import DshClient

KEY_PREFIX = "dsh_"
MAX_KEY_LENGTH = 200


def bearer_key(header: str) -> str | None:
    """The client key of an ``Authorization`` header, by the one rule both doors use: None
    without a header; ``Bearer`` (any case) and one ASCII token, else ``NotAuthenticated``."""
    parts = header.split()
    if not parts:
        return None
    if len(parts) != 2 or parts[0].lower() != "bearer":
        raise NotAuthenticated("Use 'Authorization: Bearer <client key>'.")
    if not parts[1].isascii():
        raise NotAuthenticated("The client key is not valid.")
    return parts[1]


def _new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def _no_such_client() -> NotFound:
    return NotFound("No such client.", code=ErrorCode.UNKNOWN_CLIENT)


def dsh_client_create(*, name: str, profiles: Iterable[str] = ()) -> tuple[DshClient, str]:
    """A new client and its key; the key is returned once and never stored."""
    wanted = list(dict.fromkeys(profiles))
    unknown = [p for p in wanted if p not in Profile.__members__.values()]
    if unknown:
        raise InvalidRequest(f"Unknown profile: {', '.join(unknown)}.", code=ErrorCode.UNKNOWN_PROFILE)
    name = _checked_name(name)
    key = _new_key()
    try:
        # The unique name decides: two operators creating the same name at once get one client.
        with transaction.atomic():
            client = DshClient.objects.create(name=name, key_prefix=key[:10], key_hash=token_digest(key),
                                              profiles=wanted)
    except IntegrityError:
        raise InvalidRequest("A client with that name exists.", code=ErrorCode.CLIENT_EXISTS) from None
    return client, key


def _checked_name(name: str) -> str:
    """The name as stored, or ``400`` saying what is wrong with it: the field's own rules
    (its length, printable characters), which the admin's form applies too."""
    name = name.strip()
    if not name:
        raise InvalidRequest("A client needs a name.")
    try:
        for validator in DshClient._meta.get_field("name").validators:
            validator(name)
    except ValidationError as exc:
        raise InvalidRequest(" ".join(exc.messages)) from None
    return name


def dsh_client_rotate(*, name: str, reactivate: bool = False) -> tuple[DshClient, str]:
    """Issue a new key for a client, invalidating the old one. A revoked client stays revoked
    (its new key works only once someone deliberately reactivates it) unless ``reactivate``."""
    with transaction.atomic():
        client = DshClient.objects.select_for_update().filter(name=name).first()
        if client is None:
            raise _no_such_client()
        if client.revoked_at is not None and not reactivate:
            raise Conflict("This client is revoked; rotate with reactivate to bring it back.",
                           code=ErrorCode.CLIENT_REVOKED)
        key = _new_key()
        client.key_prefix, client.key_hash, client.revoked_at = key[:10], token_digest(key), None
        client.save(update_fields=["key_prefix", "key_hash", "revoked_at"])
    return client, key


def dsh_clients_revoke(clients: Iterable[DshClient]) -> int:
    """Revoke the keys of these clients; already revoked ones keep their date. Returns how many."""
    return DshClient.objects.filter(pk__in=[c.pk for c in clients], revoked_at__isnull=True).update(
        revoked_at=timezone.now())


def dsh_client_revoke(*, name: str) -> DshClient:
    client = DshClient.objects.filter(name=name).first()
    if client is None:
        raise _no_such_client()
    dsh_clients_revoke([client])
    client.refresh_from_db(fields=["revoked_at"])
    return client


def client_key_digest(key: str) -> str:
    """What is stored of a well-formed key; empty for a string that cannot be a key."""
    if not key.startswith(KEY_PREFIX) or len(key) > MAX_KEY_LENGTH:
        return ""
    return token_digest(key)


def client_for_key(key: str) -> DshClient | None:
    digest = client_key_digest(key)
    if not digest:
        return None
    return DshClient.objects.filter(key_hash=digest, revoked_at__isnull=True).first()
