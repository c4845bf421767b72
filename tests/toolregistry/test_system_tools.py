"""arkme_context and arkme_id_change, as the contract says."""
from __future__ import annotations

import pytest

from arkme.accounts.models import Account
from groups.refs import read_source_ref
from tests.support.errors import assert_denied, assert_error


def test_context_shows_account_extensions_and_groups(dsh, session, world):
    result = dsh.execute(session, "arkme_context", {}).json()["result"]
    assert result["account"] == {"display_name": "Alice", "arkme_id": world.alice.arkme_id, "arkme_id_changeable": True}
    assert [e["extension"] for e in result["extensions"]] == [world.alice_ext.public_id]
    gallery = result["extensions"][0]["gallery"]
    assert gallery == {"extension": world.alice_ext.public_id, "revision": 0, "capacity": 20, "items": []}
    assert [g["name"] for g in result["groups"]] == ["open-group", "approval-group"]
    refs = [read_source_ref(g["source_ref"], account_public_id=world.alice.public_id) for g in result["groups"]]
    assert refs == [world.open_group.public_id, world.approval_group.public_id]


def test_context_never_shows_other_accounts_things(dsh, world):
    session = dsh.open_session(world.carol)["session"]
    result = dsh.execute(session, "arkme_context", {}).json()["result"]
    assert result["extensions"] == [] and result["groups"] == []


def test_id_change_once(dsh, session, world):
    response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "Alice_2026"})
    assert response.status_code == 200
    assert response.json()["result"]["account"] == {
        "display_name": "Alice", "arkme_id": "alice_2026", "arkme_id_changeable": False}
    second = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2027"})
    assert_error(second, 409, "arkme_id_already_changed")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id == "alice_2026"


def test_id_taken_case_insensitively(dsh, session, world):
    Account.objects.filter(pk=world.bob.pk).update(arkme_id="bobby_1")
    response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "BOBBY_1"})
    assert_error(response, 409, "arkme_id_taken")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


@pytest.mark.parametrize("bad", ["short", "1starts_digit", "_underscore", "has-dash1", "a" * 21, "spa ce_id", "ünïcode1"])
def test_ill_formed_id_is_400(dsh, session, world, bad):
    """Refused where it is first seen: pre-execute denies with the error execute gives, and no
    human is asked to approve an ID the call would refuse."""
    from toolregistry.models import ApprovalGrant

    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": bad})
    # A deny is the decision and its error, no approval and no card.
    assert assert_denied(decision, "invalid_arkme_id")["details"]["fields"] == ["arkme_id"]
    assert not ApprovalGrant.objects.exists()
    # Executed anyway, without the approval it was never given, the call is refused as unapproved.
    response = dsh.execute(session, "arkme_id_change", {"arkme_id": bad})
    assert_error(response, 403, "approval_required")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


@pytest.mark.parametrize("bad", ["short", "has-dash1"])
def test_an_ill_formed_id_with_an_approval_at_hand_is_still_400(dsh, session, world, bad, monkeypatch):
    from arkme.accounts import adapters

    # An approval asked for before the ID rule was checked at pre-execute.
    monkeypatch.setattr(adapters.AccountAdapter, "checked_arkme_id", lambda self, *, arkme_id: arkme_id)
    response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": bad})
    assert assert_error(response, 400, "invalid_arkme_id")["details"]["fields"] == ["arkme_id"]
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


@pytest.mark.parametrize("good", ["abcdef", "a" * 20, "a_1_b_2"])
def test_well_formed_ids_are_accepted(dsh, session, good):
    assert dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": good}).status_code == 200


def test_the_card_never_promises_a_change_that_cannot_happen(dsh, session, world):
    first = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).json()
    assert "will change from" in first["card"]["body"]
    dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}, approval=first["approval"])
    again = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_2027"}).json()
    assert again["decision"] == "ask" and "will be refused" in again["card"]["body"]
    assert "will change from" not in again["card"]["body"]
