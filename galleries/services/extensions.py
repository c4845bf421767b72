"""Extensions: every extension has its preview gallery from the start."""
from __future__ import annotations

from django.db import transaction

from arkme.accounts.models import Account

from ..models import Extension, Gallery


def extension_create(*, owner: Account, name: str) -> Extension:
    """An extension always has its (empty) gallery."""
    with transaction.atomic():
        extension = Extension.objects.create(owner=owner, name=name)
        Gallery.objects.create(extension=extension)
    return extension
