"""Write services of the account domain."""
from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from arkme.kernel.cancellation import cancellation_check
from arkme.kernel.errors import Conflict, ErrorCode, InvalidArguments

from .models import Account

ARKME_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]{5,19}$")


def normalise_arkme_id(raw: str) -> str:
    """Arkme IDs compare case-insensitively, so they are kept in lower case."""
    candidate = raw.strip().lower()
    if not ARKME_ID_PATTERN.fullmatch(candidate):
        raise InvalidArguments(
            "An Arkme ID has 6 to 20 characters: a letter first, then letters, digits or _.",
            code=ErrorCode.INVALID_ARKME_ID, fields=["arkme_id"],
        )
    return candidate


def account_change_arkme_id(*, account_id: int, arkme_id: str) -> Account:
    """Change the account's Arkme ID, which is allowed once per account."""
    new_id = normalise_arkme_id(arkme_id)
    # Not durable: a pre-execute call runs it inside the transaction that uses its approval.
    with transaction.atomic():
        account = Account.objects.select_for_update().get(pk=account_id)
        if not account.arkme_id_changeable:
            raise Conflict("The Arkme ID has already been changed once.", code=ErrorCode.ARKME_ID_ALREADY_CHANGED)
        if Account.objects.filter(arkme_id__iexact=new_id).exclude(pk=account.pk).exists():
            raise Conflict("That Arkme ID is taken.", code=ErrorCode.ARKME_ID_TAKEN)
        account.arkme_id = new_id
        account.arkme_id_changed_at = timezone.now()
        try:
            # The savepoint keeps the outer transaction usable if a racing change took it.
            with transaction.atomic():
                account.save(update_fields=["arkme_id", "arkme_id_changed_at"])
        except IntegrityError as exc:
            raise Conflict("That Arkme ID is taken.", code=ErrorCode.ARKME_ID_TAKEN) from exc
        cancellation_check()  # the last step before the commit: nothing for a caller that left
    return account
