"""The account Port, implemented over the account selectors and services."""
from __future__ import annotations

from .models import AccountKey
from .selectors import AccountView, account_view, account_view_by_pk
from .services import account_change_arkme_id, normalise_arkme_id


class AccountAdapter:
    def account_view(self, *, account: AccountKey) -> AccountView:
        return account_view_by_pk(account.pk)

    def change_arkme_id(self, *, account: AccountKey, arkme_id: str) -> AccountView:
        return account_view(account_change_arkme_id(account_id=account.pk, arkme_id=arkme_id))

    def checked_arkme_id(self, *, arkme_id: str) -> str:
        return normalise_arkme_id(arkme_id)
