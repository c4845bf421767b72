"""The account's page of standing grants: sign-in, its own grants alone, CSRF, and a revoke
that stops the grant covering anything."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.errors import assert_error
from toolregistry.models import ApprovalDecision, StandingGrant, ToolCall

from .test_standing_grants import REORDER, execute, grant_reorder, reorder_args

PAGE = "/approvals/grants/"


def signed_in(account, *, csrf_checks: bool = False) -> Client:
    user = get_user_model().objects.create_user(f"user-{account.public_id}", password="pw-123456")
    account.user = user
    account.save(update_fields=["user"])
    browser = Client(enforce_csrf_checks=csrf_checks)
    browser.force_login(user)
    return browser


@pytest.fixture
def filled(gs):
    body = gs.add_confirmed(gs.write_many(3))
    return [item["item"] for item in body["gallery"]["items"]]


def test_a_visitor_is_sent_to_sign_in(client, db):
    response = client.get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.post(f"{PAGE}1/revoke").status_code == 302


def test_the_account_sees_and_revokes_its_own_grant(gs, filled, world):
    grant = grant_reorder(gs)
    browser = signed_in(world.alice)
    page = browser.get(PAGE).content.decode()
    assert REORDER in page and f"extension:{gs.extension}" in page and f"{PAGE}{grant.pk}/revoke" in page
    response = browser.post(f"{PAGE}{grant.pk}/revoke")
    assert response.status_code == 302 and response["Location"] == PAGE
    grant.refresh_from_db()
    assert grant.revoked_at is not None and grant.revoked_via == "account"
    assert ApprovalDecision.objects.filter(standing_grant=grant, decision="revoked", via="account").exists()
    assert "You have no standing grants" in browser.get(PAGE).content.decode()
    arguments = reorder_args(gs, order=sorted(filled))
    done = ToolCall.objects.filter(outcome="ok").count()
    assert gs.dsh.pre_execute(gs.session, REORDER, arguments).json()["decision"] == "ask"
    assert_error(execute(gs.dsh, gs.session, REORDER, arguments), 403, "approval_required")
    assert ToolCall.objects.filter(outcome="ok").count() == done


def test_another_accounts_grant_is_404_and_stays_live(gs, filled, world):
    grant = grant_reorder(gs)
    bob = signed_in(world.bob)
    assert f"{PAGE}{grant.pk}/revoke" not in bob.get(PAGE).content.decode()
    assert bob.post(f"{PAGE}{grant.pk}/revoke").status_code == 404
    assert bob.post(f"{PAGE}{grant.pk + 1000}/revoke").status_code == 404
    assert StandingGrant.objects.get().revoked_at is None
    assert not ApprovalDecision.objects.filter(decision="revoked").exists()


def test_a_revoke_without_the_csrf_token_is_refused(gs, filled, world):
    grant = grant_reorder(gs)
    browser = signed_in(world.alice, csrf_checks=True)
    assert browser.post(f"{PAGE}{grant.pk}/revoke").status_code == 403
    assert StandingGrant.objects.get().revoked_at is None
    page = browser.get(PAGE)
    token = page.cookies["csrftoken"].value
    assert browser.post(f"{PAGE}{grant.pk}/revoke", {"csrfmiddlewaretoken": token}).status_code == 302
    assert StandingGrant.objects.get().revoked_at is not None


def test_the_page_takes_no_get_revoke(gs, filled, world):
    grant = grant_reorder(gs)
    assert signed_in(world.alice).get(f"{PAGE}{grant.pk}/revoke").status_code == 405
    assert StandingGrant.objects.get().revoked_at is None
