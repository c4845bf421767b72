"""Joining by invitation: the page, its refusals, and an admin's approval."""
from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from groups.delivery import message_deliver, messages_redeliver
from groups.models import ChatMessage, Invitation, JoinRequest, Membership
from tests.support.groups import ref_of


def login(account):
    user = get_user_model().objects.create_user(f"user{account.pk}", password="pw-123456")
    account.user = user
    account.save(update_fields=["user"])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def link(candidates, add, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        add("approval-group", [ref_of(candidates, "approval-group", "Dave")])
    text = ChatMessage.objects.get().text
    return "/" + re.search(r"https?://[^/]+/(groups/join/\S+)", text).group(1)


def test_the_invitee_asks_to_join_and_an_admin_approves(link, world):
    dave = login(world.dave)
    page = dave.get(link)
    assert page.status_code == 200 and "approval-group" in page.content.decode()
    done = dave.post(link)
    assert done.status_code == 200 and "waiting" in done.content.decode()
    request = JoinRequest.objects.get()
    assert (request.account, request.group, request.status) == (world.dave, world.approval_group, "pending")
    assert Invitation.objects.get().status == "accepted"
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("staff", "s@example.com", "pw-123456"))
    staff.post("/admin/groups/joinrequest/", {"action": "approve", "_selected_action": [request.pk]})
    assert Membership.objects.filter(group=world.approval_group, account=world.dave).exists()
    assert JoinRequest.objects.get().status == "approved"


def test_link_is_single_use(link, world):
    dave = login(world.dave)
    dave.post(link)
    again = dave.get(link)
    assert again.status_code == 410 and "already been used" in again.content.decode()
    assert dave.post(link).status_code == 410
    assert JoinRequest.objects.count() == 1


def test_someone_else_gets_403(link, world):
    assert login(world.carol).get(link).status_code == 403
    assert login(world.bob).post(link).status_code == 403
    assert JoinRequest.objects.count() == 0


def test_signed_out_visitors_are_sent_to_sign_in(link):
    response = Client().get(link)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert Client().get("/accounts/login/").status_code == 200


def test_expired_and_unknown_links_show_a_clear_page(link, world):
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    dave = login(world.dave)
    assert "expired" in dave.get(link).content.decode()
    assert dave.get("/groups/join/not-a-token").status_code == 410
    assert JoinRequest.objects.count() == 0


def test_join_requests_command(link, world):
    login(world.dave).post(link)
    request = JoinRequest.objects.get()
    out = io.StringIO()
    call_command("arkme_join_requests", "list", stdout=out)
    assert "Dave" in out.getvalue() and out.getvalue().strip().endswith("1 request(s).")
    call_command("arkme_join_requests", "decline", str(request.pk), stdout=out)
    assert JoinRequest.objects.get().status == "declined"
    with pytest.raises(CommandError, match="already declined"):
        call_command("arkme_join_requests", "approve", str(request.pk))
    assert not Membership.objects.filter(group=world.approval_group, account=world.dave).exists()


def test_delivery_is_idempotent_and_redelivery_catches_up(candidates, add, django_capture_on_commit_callbacks, monkeypatch):
    from groups import services

    monkeypatch.setattr(services, "_send", lambda pk: None)  # the broker was down at commit
    with django_capture_on_commit_callbacks(execute=True):
        add("approval-group", [ref_of(candidates, "approval-group", "Dave")])
    message = ChatMessage.objects.get()
    assert message.delivered_at is None
    ChatMessage.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    assert messages_redeliver() == 1
    assert message_deliver(message_pk=message.pk) is False
    assert ChatMessage.objects.get().delivered_at is not None


def test_broker_failure_at_commit_does_not_fail_the_call(candidates, add, django_capture_on_commit_callbacks, monkeypatch):
    from arkme.kernel.errors import QueueUnavailable
    from groups import services

    def down(*args):
        raise QueueUnavailable()

    monkeypatch.setattr(services, "enqueue", down)
    with django_capture_on_commit_callbacks(execute=True):
        response = add("approval-group", [ref_of(candidates, "approval-group", "Dave")])
    assert response.json()["result"]["results"][0]["outcome"] == "invited"
    assert ChatMessage.objects.get().delivered_at is None


@pytest.mark.parametrize("url", ["/admin/groups/group/", "/admin/groups/privatechat/", "/admin/groups/invitation/",
                                 "/admin/groups/joinrequest/?status__exact=pending"])
def test_group_admin_pages_load_and_hide_tokens(link, url):
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("staff", "s@example.com", "pw-123456"))
    response = staff.get(url)
    assert response.status_code == 200
    assert link.rsplit("/", 1)[1] not in response.content.decode()
    assert Invitation.objects.get().token_hash not in response.content.decode()


def test_private_chat_page_redacts_the_invitation_link(link, world):
    from groups.models import PrivateChat
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("staff", "s@example.com", "pw-123456"))
    chat = ChatMessage.objects.get().chat
    page = staff.get(f"/admin/groups/privatechat/{chat.pk}/change/").content.decode()
    assert "[invitation link]" in page and link.rsplit("/", 1)[1] not in page
    assert PrivateChat.objects.count() == 3


def test_the_invitee_finds_the_link_in_their_chats_page(link, world):
    page = login(world.dave).get("/groups/chats/").content.decode()
    assert link in page and "Alice" in page
    assert link not in login(world.carol).get("/groups/chats/").content.decode()


def test_the_link_points_where_the_service_was_reached_unless_configured(candidates, add, settings,
                                                                        django_capture_on_commit_callbacks):
    settings.ARKME_PUBLIC_URL = ""
    with django_capture_on_commit_callbacks(execute=True):
        add("approval-group", [ref_of(candidates, "approval-group", "Dave")])
    assert "http://testserver/groups/join/" in ChatMessage.objects.get().text
    from groups.services import invitation_link

    settings.ARKME_PUBLIC_URL = "https://arkme.example"
    assert invitation_link("tok").startswith("https://arkme.example/groups/join/")
    settings.ARKME_PUBLIC_URL = ""
    assert invitation_link("tok").startswith("http://127.0.0.1:8000/")  # outside a request: a command
