"""The demo world is complete, idempotent and usable as DSH."""
from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from arkme.accounts.models import Account
from galleries.models import Extension
from groups.models import Group, Membership, PrivateChat


def demo(*flags: str) -> dict:
    out = io.StringIO()
    call_command("arkme_demo", "--json", "--force", *flags, stdout=out)
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


def test_the_demo_refuses_to_run_with_debug_off_unless_forced(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DJANGO_DEBUG"):
        call_command("arkme_demo", "--json", stdout=io.StringIO())
    assert Account.objects.count() == 0
    settings.DEBUG = True
    call_command("arkme_demo", "--json", stdout=io.StringIO())
    assert Account.objects.count() == 4


def test_demo_passwords_are_random_and_shown_once(db):
    first = demo()
    assert set(first["logins"]) == {"admin", "alice", "bob", "carol", "dave"}
    assert len(set(first["logins"].values())) == 5 and all(len(p) >= 16 for p in first["logins"].values())
    assert "dave-demo" not in first["logins"].values()
    assert authenticate(username="dave", password=first["logins"]["dave"]) is not None
    assert demo()["logins"] == {}  # a second run sets nothing and shows nothing
    renewed = demo("--new-passwords")["logins"]
    assert renewed["dave"] != first["logins"]["dave"]
    assert authenticate(username="dave", password=first["logins"]["dave"]) is None
    assert authenticate(username="dave", password=renewed["dave"]) is not None
