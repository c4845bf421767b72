"""The core account domain: an Arkme account and its one-time changeable Arkme ID."""
from __future__ import annotations

from typing import NamedTuple, Protocol

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from arkme.kernel.ids import new_public_id


def new_account_id() -> str:
    return new_public_id("acc")


def new_initial_arkme_id() -> str:
    # An initial id that satisfies the grammar; the owner may change it once.
    return new_public_id("u", 12).replace("_", "")


class AccountIdentity(Protocol):
    """What reads need to know of the acting account: an ``Account`` or an ``AccountKey``."""

    @property
    def pk(self) -> int: ...

    @property
    def public_id(self) -> str: ...


class AccountKey(NamedTuple):
    """An account's keys, already checked by the caller (for example by the session look-up)."""

    pk: int
    public_id: str


class Account(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_account_id, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="arkme_account", help_text="The sign-in used for web pages such as invitations.",
    )
    display_name = models.CharField(max_length=100)
    arkme_id = models.CharField(max_length=20, default=new_initial_arkme_id)
    arkme_id_changed_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(Lower("arkme_id"), name="account_arkme_id_ci_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.arkme_id})"

    @property
    def arkme_id_changeable(self) -> bool:
        return self.arkme_id_changed_at is None
