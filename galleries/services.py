"""Write services of the gallery domain."""
from __future__ import annotations

from django.db import transaction

from arkme.models import Account

from .models import Extension, Gallery


def extension_create(*, owner: Account, name: str) -> Extension:
    """An extension always has its (empty) gallery."""
    with transaction.atomic():
        extension = Extension.objects.create(owner=owner, name=name)
        Gallery.objects.create(extension=extension)
    return extension
