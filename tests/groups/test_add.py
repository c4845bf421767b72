"""arkme_group_member_add: outcomes per ref, open groups, approval groups and invitations."""
from __future__ import annotations

import re

import pytest
from django.core import signing

from arkme.accounts.models import Account
from groups import refs as refs_module
from groups.models import ChatMessage, Invitation, Membership, PrivateChat
from groups.services import private_chat_ensure
from tests.support.concurrency import race
from tests.support.errors import assert_error
from tests.support.groups import ref_of


def results(response):
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_open_group_adds_members(candidates, add, world):
    carol = ref_of(candidates, "open-group", "Carol")
    body = results(add("open-group", [carol]))
    assert body["results"] == [{"candidate_ref": carol, "display_name": "Carol", "outcome": "added"}]
    assert body["group"]["member_count"] == 3
    assert Membership.objects.filter(group=world.open_group, account=world.carol).exists()


def test_approval_group_invites_privately(candidates, add, world, django_capture_on_commit_callbacks):
    dave = ref_of(candidates, "approval-group", "Dave")
    with django_capture_on_commit_callbacks(execute=True):
        body = results(add("approval-group", [dave]))
    assert body["results"][0]["outcome"] == "invited"
    assert "groups/join" not in str(body)
    invitation = Invitation.objects.get()
    assert (invitation.group, invitation.invitee, invitation.status) == (world.approval_group, world.dave, "pending")
    chat = PrivateChat.objects.get(public_id=private_chat_ensure(a=world.alice, b=world.dave).public_id)
    message = ChatMessage.objects.get(chat=chat)
    assert message.delivered_at is not None and message.sender == world.alice
    token = re.search(r"/groups/join/(\S+)", message.text).group(1)
    assert token not in invitation.token_hash
    assert not Membership.objects.filter(group=world.approval_group, account=world.dave).exists()


def test_pending_invitation_is_reused(candidates, add, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        results(add("approval-group", [ref_of(candidates, "approval-group", "Dave")]))
        again = results(add("approval-group", [ref_of(candidates, "approval-group", "Dave")]))
    assert again["results"][0]["outcome"] == "invited"
    assert Invitation.objects.count() == 1 and ChatMessage.objects.count() == 1


def test_each_ref_gets_its_own_outcome_in_order(candidates, add, world):
    carol = ref_of(candidates, "open-group", "Carol")
    dave = ref_of(candidates, "open-group", "Dave")
    other_group = ref_of(candidates, "approval-group", "Bob")
    foreign = signing.dumps({"c": "chat_x"}, salt="arkme.groups.candidate_ref:x:y")
    Account.objects.filter(pk=world.dave.pk).update(is_active=False)
    body = results(add("open-group", [carol, "tampered" + carol[8:], other_group, dave, foreign, carol + "x"]))
    outcomes = [r["outcome"] for r in body["results"]]
    assert outcomes == ["added", "invalid_ref", "invalid_ref", "not_eligible", "invalid_ref", "invalid_ref"]
    assert [r["candidate_ref"] for r in body["results"]][0] == carol
    assert "display_name" not in body["results"][1]


def test_already_member_and_chat_gone(candidates, add, world):
    carol = ref_of(candidates, "open-group", "Carol")
    dave = ref_of(candidates, "open-group", "Dave")
    results(add("open-group", [carol]))
    PrivateChat.objects.filter(pk=private_chat_ensure(a=world.alice, b=world.dave).pk).delete()
    body = results(add("open-group", [carol, dave]))
    assert [r["outcome"] for r in body["results"]] == ["already_member", "not_eligible"]


def test_expired_ref(candidates, add, monkeypatch):
    carol = ref_of(candidates, "open-group", "Carol")
    monkeypatch.setattr(refs_module, "CANDIDATE_REF_MAX_AGE", -1)
    assert results(add("open-group", [carol]))["results"][0]["outcome"] == "expired_ref"


@pytest.mark.parametrize("refs_of", [lambda r: [], lambda r: [r, r], lambda r: [f"{r}{i}" for i in range(21)]])
def test_ref_list_rules_are_400_before_anything_is_written(dsh, session, refs, candidates, refs_of):
    carol = ref_of(candidates, "open-group", "Carol")
    response = dsh.execute(session, "arkme_group_member_add",
                           {"source_ref": refs["open-group"], "candidate_refs": refs_of(carol)}, approval="apv_x")
    assert assert_error(response, 400, "invalid_arguments")["details"]["fields"] == ["candidate_refs"]
    assert Membership.objects.count() == 3


def test_add_needs_approval_and_the_card_names_group_and_people(dsh, session, refs, candidates):
    args = {"source_ref": refs["approval-group"],
            "candidate_refs": [ref_of(candidates, "approval-group", "Carol"), ref_of(candidates, "approval-group", "Dave")]}
    assert_error(dsh.execute(session, "arkme_group_member_add", args), 403, "approval_required")
    card = dsh.pre_execute(session, "arkme_group_member_add", args).json()["card"]
    assert "approval-group" in card["title"] and "Carol" in card["body"] and "Dave" in card["body"]
    assert "invitation" in card["body"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_adds_of_one_person_give_one_membership(postgres, world):
    from groups.refs import candidate_ref_maker, make_source_ref
    from groups.services import group_members_add

    chat = private_chat_ensure(a=world.alice, b=world.carol)
    source = make_source_ref(account_public_id=world.alice.public_id, group_public_id=world.open_group.public_id)
    ref = candidate_ref_maker(account_public_id=world.alice.public_id,
                              group_public_id=world.open_group.public_id)(chat.public_id)

    def add():
        return group_members_add(account=world.alice, source_ref=source, candidate_refs=[ref]).results[0].outcome

    outcomes = [value for _, value in race([add] * 8)]
    assert sorted(outcomes) == ["added"] + ["already_member"] * 7
    assert Membership.objects.filter(group=world.open_group, account=world.carol).count() == 1


def test_the_invitation_text_states_the_configured_lifetime(candidates, add, settings,
                                                             django_capture_on_commit_callbacks):
    settings.ARKME_INVITATION_TTL_SECONDS = 3 * 86400
    with django_capture_on_commit_callbacks(execute=True):
        results(add("approval-group", [ref_of(candidates, "approval-group", "Dave")]))
    text = ChatMessage.objects.get().text
    assert "for 3 days" in text and "7 days" not in text


def _two_refs_for(world, group, person) -> tuple[str, str]:
    """Two refs naming one person's chat, signed at different seconds: not the same string, so
    the call's refs pass the duplicate check."""
    import time as real_time
    from unittest import mock

    from groups.refs import candidate_ref_maker

    chat = private_chat_ensure(a=world.alice, b=person)
    first = candidate_ref_maker(account_public_id=world.alice.public_id,
                                group_public_id=group.public_id)(chat.public_id)
    with mock.patch("django.core.signing.time.time", return_value=real_time.time() - 5):
        second = candidate_ref_maker(account_public_id=world.alice.public_id,
                                     group_public_id=group.public_id)(chat.public_id)
    assert first != second
    return first, second


def test_two_refs_for_one_person_add_them_once(add, world, dsh, session, refs):
    first, second = _two_refs_for(world, world.open_group, world.carol)
    card = dsh.pre_execute(session, "arkme_group_member_add",
                           {"source_ref": refs["open-group"], "candidate_refs": [first, second]}).json()["card"]
    assert card["body"].count("Carol") == 1 and "cannot be added" not in card["body"]
    body = results(add("open-group", [first, second]))
    assert [r["outcome"] for r in body["results"]] == ["added", "already_member"]
    assert body["group"]["member_count"] == 3
    assert Membership.objects.filter(group=world.open_group, account=world.carol).count() == 1


def test_two_refs_for_one_person_invite_them_once(add, world, django_capture_on_commit_callbacks):
    """The second ref answers ``invited``, as a second call would (the pending invitation is
    reused): ``already_member`` would tell the human the person is in the group, which they
    are not until they accept and an admin approves."""
    first, second = _two_refs_for(world, world.approval_group, world.dave)
    with django_capture_on_commit_callbacks(execute=True):
        body = results(add("approval-group", [first, second]))
    assert [r["outcome"] for r in body["results"]] == ["invited", "invited"]
    assert Invitation.objects.count() == 1 and ChatMessage.objects.count() == 1
