"""Reads of the group domain."""
from __future__ import annotations

from django.db.models import QuerySet

from arkme.models import Account

from .models import Group


def groups_of(account: Account) -> QuerySet[Group]:
    return Group.objects.filter(memberships__account=account).order_by("id").distinct()
