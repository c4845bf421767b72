"""Rows handled a batch at a time: each statement's parameters stay far below the database's
limits (PostgreSQL takes at most 65,535), and a failure loses only its batch."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Model, QuerySet


def pk_batches(queryset: QuerySet[Any], size: int) -> Iterator[list[Any]]:
    """The queryset's primary keys in ascending batches of at most ``size``, each read after
    the previous one was handled: a caller may delete or change the rows of a batch, and the
    next batch starts after it (never the same rows twice, even when some were left)."""
    rows = queryset
    while batch := list(rows.order_by("pk").values_list("pk", flat=True)[:size]):
        yield batch
        rows = queryset.filter(pk__gt=batch[-1])


def delete_in_batches(queryset: QuerySet[Any], size: int) -> int:
    """Delete the queryset's rows, a batch per statement. Returns how many rows were deleted
    (with the rows their deletion cascaded to)."""
    model: type[Model] = queryset.model
    deleted = 0
    for batch in pk_batches(queryset, size):
        deleted += model._default_manager.filter(pk__in=batch).delete()[0]
    return deleted
