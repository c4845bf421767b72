"""The account Port, implemented over the account services."""
from __future__ import annotations

from typing import Any

from .models import Account
from .services import account_change_arkme_id


def account_view(account: Account) -> dict[str, Any]:
    return {
        "display_name": account.display_name,
        "arkme_id": account.arkme_id,
        "arkme_id_changeable": account.arkme_id_changeable,
    }


class AccountAdapter:
    def account_view(self, *, account_pk: int) -> dict[str, Any]:
        return account_view(Account.objects.get(pk=account_pk))

    def change_arkme_id(self, *, account_pk: int, arkme_id: str) -> dict[str, Any]:
        return account_view(account_change_arkme_id(account_id=account_pk, arkme_id=arkme_id))
