"""Signed refs: bound to account (and group), expiring, holding no account identifier."""
from __future__ import annotations

import base64
import json

import pytest
from django.core import signing

from arkme.kernel.signing import RefExpired, RefInvalid
from groups import refs as refs_module
from groups.models import PrivateChat
from groups.refs import candidate_ref_maker, read_candidate_ref, read_source_ref


def decoded_payload(ref: str) -> str:
    """What anyone can read out of a signed value: its base64 JSON payload."""
    payload = ref.split(":")[0]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


def account_identifiers(world) -> list[str]:
    people = [world.alice, world.bob, world.carol, world.dave]
    return [str(a.pk) for a in people] + [a.public_id for a in people] + [a.arkme_id for a in people] + \
        [a.display_name for a in people]


def test_every_ref_the_api_returns_holds_no_account_identifier(world, refs, candidates):
    handed_out = list(refs.values())
    for group in refs:
        handed_out += [c["candidate_ref"] for c in candidates(group)["candidates"]]
    assert len(handed_out) >= 5
    identifiers = account_identifiers(world)
    for ref in handed_out:
        payload = decoded_payload(ref)
        json.loads(payload)
        for identifier in identifiers:
            assert f'"{identifier}"' not in payload and f":{identifier}," not in payload, (identifier, payload)
        assert "acc_" not in payload


def test_source_ref_is_bound_to_the_account(world, refs):
    ref = refs["open-group"]
    assert read_source_ref(ref, account_public_id=world.alice.public_id) == world.open_group.public_id
    with pytest.raises(RefInvalid):
        read_source_ref(ref, account_public_id=world.bob.public_id)


def test_candidate_ref_is_bound_to_account_and_group(world):
    chat = PrivateChat.objects.first()
    ref = candidate_ref_maker(account_public_id=world.alice.public_id,
                              group_public_id=world.open_group.public_id)(chat.public_id)
    assert read_candidate_ref(ref, account_public_id=world.alice.public_id,
                              group_public_id=world.open_group.public_id) == chat.public_id
    for account, group in ((world.bob, world.open_group), (world.alice, world.approval_group)):
        with pytest.raises(RefInvalid):
            read_candidate_ref(ref, account_public_id=account.public_id, group_public_id=group.public_id)


@pytest.mark.parametrize("value", ["", "grp_abc", None, 5, "x" * 600, "e30:1:abc", signing.dumps({"g": "x"})])
def test_raw_or_foreign_values_are_invalid(world, value):
    with pytest.raises(RefInvalid):
        read_source_ref(value, account_public_id=world.alice.public_id)


def test_refs_expire(world, refs, monkeypatch):
    monkeypatch.setattr(refs_module, "SOURCE_REF_MAX_AGE", -1)
    with pytest.raises(RefExpired):
        read_source_ref(refs["open-group"], account_public_id=world.alice.public_id)


def test_max_ages():
    assert refs_module.SOURCE_REF_MAX_AGE == 24 * 3600 and refs_module.CANDIDATE_REF_MAX_AGE == 3600
