"""Reads of the account domain, and the one projection an account result takes."""
from __future__ import annotations

from typing import TypedDict

from django.db.models import QuerySet

from arkme.kernel.errors import ErrorCode, NotFound

from .models import Account


class AccountView(TypedDict):
    display_name: str
    arkme_id: str
    arkme_id_changeable: bool


def active_accounts() -> QuerySet[Account]:
    return Account.objects.filter(is_active=True)


def account_by_public_id(public_id: str) -> Account:
    """The active account with this public id, or ``404 unknown_account``."""
    account = active_accounts().filter(public_id=str(public_id)).first()
    if account is None:
        raise NotFound("No such account.", code=ErrorCode.UNKNOWN_ACCOUNT)
    return account


def account_view(account: Account) -> AccountView:
    return {
        "display_name": account.display_name,
        "arkme_id": account.arkme_id,
        "arkme_id_changeable": account.arkme_id_changeable,
    }
