"""Rows handled a batch at a time."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from arkme.kernel.batches import delete_in_batches, pk_batches

pytestmark = pytest.mark.django_db


def _groups(count: int, name: str = "g") -> list[int]:
    return [group.pk for group in Group.objects.bulk_create([Group(name=f"{name}{i}") for i in range(count)])]


def test_a_batched_delete_deletes_every_row_a_batch_per_statement():
    kept = _groups(3)
    doomed = Group.objects.filter(pk__gt=kept[-1])
    _groups(25, "doomed")
    with CaptureQueriesContext(connection) as queries:
        assert delete_in_batches(doomed, 10) == 25
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('DELETE FROM "auth_group" ')]
    assert len(deletes) == 3
    assert list(Group.objects.order_by("pk").values_list("pk", flat=True)) == kept


def test_batches_go_on_after_rows_a_handler_left():
    pks = _groups(7)
    seen = [batch for batch in pk_batches(Group.objects.all(), 3)]  # nothing deleted
    assert seen == [pks[0:3], pks[3:6], pks[6:7]]
