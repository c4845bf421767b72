"""Reads of the account domain."""
from __future__ import annotations

from django.db.models import QuerySet

from .errors import NotFound
from .models import Account


def active_accounts() -> QuerySet[Account]:
    return Account.objects.filter(is_active=True)


def account_by_public_id(public_id: str) -> Account:
    """The active account with this public id, or ``404 unknown_account``."""
    account = active_accounts().filter(public_id=str(public_id)).first()
    if account is None:
        raise NotFound("No such account.", code="unknown_account")
    return account
