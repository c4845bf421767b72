"""arkme_group_member_candidates."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from arkme.accounts.models import Account
from groups.models import Membership, PrivateChat
from groups.refs import make_source_ref
from groups.selectors import group_and_candidates
from groups.services import membership_ensure, private_chat_ensure
from tests.support.errors import assert_error


def candidate_chats(account, group, *, query, limit):
    """The candidate rows of ``group_and_candidates`` for a group, as its source ref names it."""
    ref = make_source_ref(account_public_id=account.public_id, group_public_id=group.public_id)
    found, rows = group_and_candidates(account, ref, query=query, limit=limit)
    assert found.pk == group.pk
    return [{"public_id": chat, "other_name": name} for chat, name in rows]


def names(result):
    return [c["display_name"] for c in result["candidates"]]


def test_candidates_are_chat_partners_who_are_not_members(candidates, world):
    result = candidates("open-group")
    assert set(names(result)) == {"Carol", "Dave"}  # bob is already a member
    assert result["group"] == {"name": "open-group", "join_policy": "open", "member_count": 2}
    assert result["truncated"] is False
    assert set(result["candidates"][0]) == {"candidate_ref", "display_name"}
    assert set(names(candidates("approval-group"))) == {"Bob", "Carol", "Dave"}


def test_newest_chat_activity_first(candidates, world):
    now = timezone.now()
    for offset, person in enumerate((world.dave, world.bob, world.carol)):
        chat = private_chat_ensure(a=world.alice, b=person)
        PrivateChat.objects.filter(pk=chat.pk).update(last_activity_at=now - timedelta(minutes=offset))
    assert names(candidates("approval-group")) == ["Dave", "Bob", "Carol"]


def test_deactivated_people_are_left_out(candidates, world):
    Account.objects.filter(pk=world.carol.pk).update(is_active=False)
    assert names(candidates("open-group")) == ["Dave"]


def test_query_is_case_insensitive_on_display_name(candidates):
    assert names(candidates("approval-group", query="CAR")) == ["Carol"]
    assert names(candidates("approval-group", query="zzz")) == []


def test_limit_and_truncated(candidates):
    result = candidates("approval-group", limit=2)
    assert len(result["candidates"]) == 2 and result["truncated"] is True
    assert candidates("approval-group", limit=3)["truncated"] is False


def test_an_integral_limit_written_as_a_float_is_that_integer(candidates):
    """JSON has one number type, and JSON Schema's integer accepts 2.0: it is the limit 2."""
    as_float, as_int = candidates("approval-group", limit=2.0), candidates("approval-group", limit=2)
    assert names(as_float) == names(as_int) and len(names(as_float)) == 2
    assert as_float["truncated"] is as_int["truncated"] is True


@pytest.mark.parametrize("arguments,field", [({"limit": 0}, "limit"), ({"limit": 101}, "limit"),
                                             ({"limit": 2.5}, "limit"),
                                             ({"query": "x" * 101}, "query"), ({"other": 1}, "other")])
def test_bad_arguments_are_400(dsh, session, refs, arguments, field):
    response = dsh.execute(session, "arkme_group_member_candidates", {"source_ref": refs["open-group"], **arguments})
    assert field in assert_error(response, 400, "invalid_arguments")["details"]["fields"]


@pytest.mark.parametrize("ref,code,status", [("grp_raw", "invalid_source_ref", 400), ("", "invalid_arguments", 400)])
def test_bad_source_ref_refuses_the_whole_call(dsh, session, ref, code, status):
    response = dsh.execute(session, "arkme_group_member_candidates", {"source_ref": ref})
    assert_error(response, status, code)


def test_another_accounts_source_ref_is_refused(dsh, world, refs):
    bob_session = dsh.open_session(world.bob)["session"]
    response = dsh.execute(bob_session, "arkme_group_member_candidates", {"source_ref": refs["open-group"]})
    assert_error(response, 400, "invalid_source_ref")


def test_a_former_member_is_refused(dsh, session, refs, world):
    Membership.objects.filter(group=world.open_group, account=world.alice).delete()
    response = dsh.execute(session, "arkme_group_member_candidates", {"source_ref": refs["open-group"]})
    assert_error(response, 403, "not_a_member")


def _world_of(chats: int, members: int):
    me = Account.objects.create(display_name="Me")
    from groups.models import Group
    group = Group.objects.create(name="g")
    membership_ensure(group=group, account=me)
    people = Account.objects.bulk_create([Account(display_name=f"P{i}", arkme_id=f"p{i:07d}x") for i in range(chats)])
    now = timezone.now()
    PrivateChat.objects.bulk_create([
        PrivateChat(account_low=min(me, p, key=lambda a: a.pk), account_high=max(me, p, key=lambda a: a.pk),
                    last_activity_at=now - timedelta(seconds=i)) for i, p in enumerate(people)])
    Membership.objects.bulk_create([Membership(group=group, account=p) for p in people[:members]])
    return me, group


@pytest.mark.django_db
@pytest.mark.parametrize("chats,members", [(1, 0), (1000, 500)])
def test_the_group_and_its_candidates_are_one_query(chats, members):
    me, group = _world_of(chats, members)
    with CaptureQueriesContext(connection) as queries:
        rows = candidate_chats(me, group, query=None, limit=50)
    assert len(queries) == 1
    assert len(rows) == min(51, chats - members)


@pytest.mark.django_db
@pytest.mark.parametrize("chats,members", [(1, 0), (1000, 500)])
def test_the_whole_service_call_takes_one_query(chats, members):
    from groups.refs import make_source_ref
    from groups.services import group_member_candidates

    me, group = _world_of(chats, members)
    ref = make_source_ref(account_public_id=me.public_id, group_public_id=group.public_id)
    with CaptureQueriesContext(connection) as queries:
        result = group_member_candidates(account=me, source_ref=ref, limit=50)
    assert len(queries) == 1
    assert result.group.member_count == members + 1


@pytest.mark.django_db
def test_chats_on_both_sides_of_the_pair_merge_newest_first():
    from groups.models import Group

    # Chats store the lower account id first, so people created before "me" sit on the other side.
    before = [Account.objects.create(display_name=f"Before {i}") for i in range(3)]
    me = Account.objects.create(display_name="Me")
    after = [Account.objects.create(display_name=f"After {i}") for i in range(3)]
    group = Group.objects.create(name="g")
    membership_ensure(group=group, account=me)
    now = timezone.now()
    newest_first = [after[0], before[0], after[1], before[1], before[2], after[2]]
    for age, person in enumerate(newest_first):
        chat = private_chat_ensure(a=me, b=person)
        PrivateChat.objects.filter(pk=chat.pk).update(last_activity_at=now - timedelta(minutes=age))
    expected = [p.display_name for p in newest_first]
    assert [r["other_name"] for r in candidate_chats(me, group, query=None, limit=10)] == expected
    assert [r["other_name"] for r in candidate_chats(me, group, query=None, limit=3)] == expected[:4]
    assert [r["other_name"] for r in candidate_chats(me, group, query="before", limit=1)] == expected[1:4:2]


@pytest.mark.django_db
def test_query_wildcards_match_literally():
    from groups.models import Group

    me = Account.objects.create(display_name="Me")
    group = Group.objects.create(name="g")
    membership_ensure(group=group, account=me)
    for name in ("50% off", "a_b", "axb", "back\\slash"):
        private_chat_ensure(a=me, b=Account.objects.create(display_name=name))

    def found(query):
        return sorted(r["other_name"] for r in candidate_chats(me, group, query=query, limit=10))

    assert found("%") == ["50% off"]
    assert found("_") == ["a_b"]
    assert found("\\") == ["back\\slash"]
    assert found("A") == ["a_b", "axb", "back\\slash"]


def test_the_api_call_reads_the_account_only_through_the_session(dsh, session, refs):
    # The client key, the session and its account in one statement; the group with the
    # candidates in another; the audit row.
    from rest_framework.test import APIClient

    api = APIClient()  # not the recording client, whose leak scan reads the database too
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
    path = f"/dsh/v1/sessions/{session}/tools/arkme_group_member_candidates/execute"
    with CaptureQueriesContext(connection) as queries:
        response = api.post(path, {"arguments": {"source_ref": refs["open-group"]}}, format="json")
    assert response.status_code == 200
    assert len(queries) == 3, [q["sql"][:80] for q in queries]


@pytest.mark.django_db
def test_the_unqueried_list_reads_the_recent_window_and_a_query_every_chat(settings):
    """Without a query a long history costs the window; a query searches every chat."""
    me, group = _world_of(150, 0)
    chats = PrivateChat.objects.filter(account_low=me).order_by("-last_activity_at")
    newest = [chat.account_high_id for chat in chats[:120]]
    Membership.objects.bulk_create([Membership(group=group, account_id=pk) for pk in newest])
    settings.ARKME_CANDIDATE_RECENT_CHATS = 100
    assert candidate_chats(me, group, query=None, limit=50) == []
    assert [r["other_name"] for r in candidate_chats(me, group, query="P149", limit=50)] == ["P149"]
    assert len(candidate_chats(me, group, query="P", limit=50)) == 30
    settings.ARKME_CANDIDATE_RECENT_CHATS = 150
    assert len(candidate_chats(me, group, query=None, limit=50)) == 30


@pytest.mark.django_db
def test_a_query_finds_an_older_partner_when_every_recent_one_is_a_member():
    """The newest ARKME_CANDIDATE_RECENT_CHATS (1,000) partners are members; two older ones
    are not. The unqueried list is empty and says it searched the recent chats; a query for
    an older partner's name finds them, and says it searched all."""
    from groups.services import group_member_candidates

    window = 1000
    me, group = _world_of(window + 2, window)  # the newest `window` chats' people are members
    assert Account.objects.get(display_name=f"P{window + 1}")  # the oldest chat
    ref = make_source_ref(account_public_id=me.public_id, group_public_id=group.public_id)
    unqueried = group_member_candidates(account=me, source_ref=ref)
    assert (unqueried.candidates, unqueried.truncated, unqueried.scope) == ([], False, "recent")
    found = group_member_candidates(account=me, source_ref=ref, query=f"p{window + 1}")
    assert [c["display_name"] for c in found.candidates] == [f"P{window + 1}"] and found.scope == "all"
    older = group_member_candidates(account=me, source_ref=ref, query="P", limit=1)
    assert [c["display_name"] for c in older.candidates] == [f"P{window}"] and older.truncated


def test_the_result_says_which_chats_were_searched(candidates):
    assert candidates("approval-group")["scope"] == "recent"
    assert candidates("approval-group", query="car")["scope"] == "all"
    assert candidates("approval-group", query="   ")["scope"] == "recent"  # a blank query is none


@pytest.mark.django_db
def test_a_former_member_is_refused_and_the_statement_returns_no_candidate():
    from arkme.kernel.errors import Forbidden
    from groups.selectors import _candidates_sql, candidates_params

    me, group = _world_of(5, 0)
    Membership.objects.filter(group=group, account=me).delete()
    with pytest.raises(Forbidden):
        candidate_chats(me, group, query=None, limit=50)
    with connection.cursor() as cursor:
        cursor.execute(_candidates_sql(connection.vendor, False),
                       candidates_params(me.pk, group.public_id, query=None, limit=50))
        rows = cursor.fetchall()
    assert len(rows) == 1 and not rows[0][-3]  # the group's row only, and not a member


@pytest.mark.django_db
def test_an_unknown_group_is_not_found():
    from arkme.kernel.errors import NotFound
    from groups.models import Group

    me, group = _world_of(3, 0)
    gone = Group(public_id="grp_gone", name="gone")
    with pytest.raises(NotFound):
        candidate_chats(me, gone, query=None, limit=50)
