"""The group-side Ports, implemented over the group selectors and services."""
from __future__ import annotations

from typing import Any

from arkme.models import Account

from .refs import make_source_ref
from .selectors import groups_of


class GroupAdapter:
    def groups_with_source_refs(self, *, account_pk: int) -> list[dict[str, Any]]:
        account = Account.objects.get(pk=account_pk)
        return [
            {"name": group.name, "source_ref": make_source_ref(
                account_public_id=account.public_id, group_public_id=group.public_id)}
            for group in groups_of(account)
        ]
