"""Reads of the account domain, and the one projection an account result takes."""
from __future__ import annotations

import functools
from typing import TypedDict

from django.db.models import QuerySet

from arkme.kernel.errors import ErrorCode, NotFound
from arkme.kernel.sql import column, hot_cursor, table

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


@functools.cache
def _account_view_sql(vendor: str) -> str:
    """``account_view_by_pk``'s read, written once per database vendor: ``arkme_context`` runs
    it on every call, and composing it with the ORM cost more than running it."""
    names = ", ".join(column(Account, name) for name in ("display_name", "arkme_id", "arkme_id_changed_at"))
    return f"SELECT {names} FROM {table(Account)} WHERE {column(Account, 'id')} = %s"  # noqa: S608


def account_view_by_pk(pk: int) -> AccountView:
    """The projection of the account with this primary key (the session already checked it)."""
    with hot_cursor() as cursor:
        cursor.execute(_account_view_sql(cursor.db.vendor), [pk])
        row = cursor.fetchone()
    if row is None:
        raise NotFound("No such account.", code=ErrorCode.UNKNOWN_ACCOUNT)
    display_name, arkme_id, changed_at = row
    return {"display_name": display_name, "arkme_id": arkme_id, "arkme_id_changeable": changed_at is None}


def account_view(account: Account) -> AccountView:
    return {
        "display_name": account.display_name,
        "arkme_id": account.arkme_id,
        "arkme_id_changeable": account.arkme_id_changeable,
    }
