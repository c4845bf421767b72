"""The demo world is complete, idempotent and usable as DSH."""
from __future__ import annotations

import io
import json

from django.core.management import call_command
from rest_framework.test import APIClient

from arkme.accounts.models import Account
from galleries.models import Extension
from groups.models import Group, Membership, PrivateChat


def demo() -> dict:
    out = io.StringIO()
    call_command("arkme_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_demo_world_is_idempotent(db):
    first, second = demo(), demo()
    for key in ("accounts", "extensions", "groups", "workspace_root"):
        assert first[key] == second[key]
    assert set(first["image_refs"]) == {"alice-logo", "bob-logo"}
    assert set(first["accounts"]) >= {"alice", "bob", "carol", "dave"}
    assert Account.objects.count() == 4
    assert Extension.objects.get(public_id=first["extensions"]["alice-ext"]).owner.public_id == first["accounts"]["alice"]
    assert Group.objects.get(public_id=first["groups"]["open-group"]).join_policy == "open"
    assert Group.objects.get(public_id=first["groups"]["approval-group"]).join_policy == "approval"
    assert Membership.objects.filter(account__user__username="alice").count() == 2
    assert Membership.objects.filter(account__user__username="bob", group__name="open-group").exists()
    assert PrivateChat.objects.count() == 3


def test_demo_key_works(db):
    world = demo()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {world['dsh_key']}")
    response = api.post("/dsh/v1/sessions", {"account": world["accounts"]["alice"]}, format="json")
    assert response.status_code == 201
