"""Random public identifiers: what leaves the service instead of primary keys."""
from __future__ import annotations

import hashlib
import secrets
import string

_ALPHABET = string.ascii_lowercase + string.digits


def new_public_id(prefix: str, length: int = 20) -> str:
    """``<prefix>_<random>``: unguessable, URL-safe, and telling its kind at a glance."""
    return f"{prefix}_{''.join(secrets.choice(_ALPHABET) for _ in range(length))}"


# Model field defaults must be importable by name for migrations.
def new_extension_id() -> str:
    return new_public_id("ext")


def new_item_id() -> str:
    return new_public_id("img")


def new_group_id() -> str:
    return new_public_id("grp")


def new_chat_id() -> str:
    return new_public_id("chat")


def new_session_id() -> str:
    return new_public_id("ses")


def new_account_image_id() -> str:
    return new_public_id("aim")


def new_operation_id() -> str:
    return new_public_id("op")


def token_digest(token: str) -> str:
    """What is stored of a bearer secret (client key, approval, invitation token). The tokens
    carry 256 random bits, so a fast unsalted hash cannot be brute-forced."""
    return hashlib.sha256(token.encode()).hexdigest()
