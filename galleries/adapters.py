"""The gallery-side Ports, implemented over the gallery selectors and services."""
from __future__ import annotations

from typing import Any

from arkme.models import Account

from .selectors import extension_for_owner, extensions_of, gallery_view


class ExtensionAdapter:
    def extensions_with_galleries(self, *, account_pk: int) -> list[dict[str, Any]]:
        account = Account.objects.get(pk=account_pk)
        return [
            {"extension": ext.public_id, "name": ext.name, "gallery": gallery_view(ext.gallery)}
            for ext in extensions_of(account)
        ]

    def extension_name(self, *, account_pk: int, extension: str) -> str:
        return extension_for_owner(Account.objects.get(pk=account_pk), extension).name
