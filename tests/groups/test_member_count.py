"""A group's member_count is a column the database keeps exact, whoever writes memberships."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from arkme.accounts.models import Account
from groups.models import Group, Membership
from groups.refs import make_source_ref
from groups.services import group_member_candidates, membership_ensure

pytestmark = pytest.mark.django_db


def counted(group: Group) -> tuple[int, int]:
    """The kept count and a real COUNT, side by side."""
    return Group.objects.get(pk=group.pk).member_count, Membership.objects.filter(group=group).count()


def people(n: int) -> list[Account]:
    return Account.objects.bulk_create([Account(display_name=f"P{i}") for i in range(n)])


def test_every_way_of_writing_memberships_keeps_the_count_exact():
    group, other = Group.objects.create(name="g"), Group.objects.create(name="h")
    first, second, *rest = people(12)
    membership_ensure(group=group, account=first)  # the service
    Membership.objects.create(group=group, account=second)  # the admin's save
    Membership.objects.bulk_create([Membership(group=group, account=p) for p in rest])  # a bulk load
    assert counted(group) == (12, 12)
    Membership.objects.filter(group=group, account__in=rest[:3]).update(group=other)  # moved by hand
    assert counted(group) == (9, 9) and counted(other) == (3, 3)
    Membership.objects.filter(group=group, account=first).update(role="admin")  # not moved: unchanged
    assert counted(group) == (9, 9)
    rest[4].delete()  # an account deleted: its memberships cascade
    Membership.objects.filter(account=second).delete()  # a queryset delete
    assert counted(group) == (7, 7)
    with connection.cursor() as cursor:  # raw SQL
        cursor.execute("DELETE FROM groups_membership WHERE account_id = %s", [first.pk])
    assert counted(group) == (6, 6)


def test_a_stale_group_saved_does_not_overwrite_the_count():
    group = Group.objects.create(name="g")
    loaded = Group.objects.get(pk=group.pk)  # as the admin's change form loads it
    Membership.objects.bulk_create([Membership(group=group, account=p) for p in people(3)])
    loaded.name = "renamed"
    loaded.save()
    assert Group.objects.get(pk=group.pk).name == "renamed"
    assert counted(group) == (3, 3)


def test_the_candidates_call_reads_the_size_without_counting():
    me, = people(1)
    group = Group.objects.create(name="g")
    membership_ensure(group=group, account=me)
    Membership.objects.bulk_create([Membership(group=group, account=p) for p in people(40)])
    ref = make_source_ref(account_public_id=me.public_id, group_public_id=group.public_id)
    with CaptureQueriesContext(connection) as queries:
        result = group_member_candidates(account=me, source_ref=ref, limit=50)
    assert result.group.member_count == 41
    assert not any("COUNT(" in query["sql"].upper() for query in queries.captured_queries)


def test_the_add_call_reports_the_size_after_its_change(dsh, session, refs, world):
    before = dsh.execute(session, "arkme_group_member_candidates", {"source_ref": refs["open-group"]}).json()
    offered = before["result"]["candidates"][0]["candidate_ref"]
    added = dsh.approve_and_execute(session, "arkme_group_member_add",
                                    {"source_ref": refs["open-group"], "candidate_refs": [offered]})
    assert added.status_code == 200, added.json()
    group = added.json()["result"]["group"]
    assert group["member_count"] == before["result"]["group"]["member_count"] + 1
    assert group["member_count"] == Membership.objects.filter(group=world.open_group).count()
