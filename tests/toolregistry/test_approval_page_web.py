"""Arkme's approval page itself: sign-in, only the session's account, CSRF, what the card shows
(the images in the order the call leaves them, the people, the old and new ID), the decided and
expired states, the images' own view, the headers, and the DSH client's page tools in the admin."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from arkme.conversations.models import DshClient
from arkme.kernel.ids import token_digest
from galleries.blobs.services import blob_thumbnail
from galleries.models import GalleryItem
from tests.support.groups import ref_of
from tests.support.pages import browser_of, page_path
from toolregistry.models import ApprovalDecision, ApprovalGrant, ApprovalScope

REORDER = "arkme_extension_preview_reorder"
IMAGE_SRC = re.compile(rb'<img src="(/approvals/[^"]+/images/\d+)"')


@pytest.fixture(autouse=True)
def on_page(settings):
    settings.ARKME_APPROVAL_PAGE_TOOLS = ("*",)


@pytest.fixture
def asked(gs, filled):
    """A pending page approval of a reorder of alice's gallery: (decision, its page's path, order)."""
    items, revision = filled
    order = [items[2], items[0], items[1]]
    decision = gs.dsh.pre_execute(gs.session, REORDER, {"extension": gs.extension, "order": order,
                                                        "revision": revision}).json()
    return decision, page_path(decision["approval_url"]), order


def grant_of(decision) -> ApprovalGrant:
    return ApprovalGrant.objects.get(token_hash=token_digest(decision["approval"]))


def thumbnail_of(item: str) -> bytes:
    return blob_thumbnail(GalleryItem.objects.get(public_id=item).blob.sha256)


def test_a_visitor_not_signed_in_is_sent_to_sign_in(asked):
    decision, path, _ = asked
    for response in (Client().get(path), Client().post(path, {"decision": "approve"}), Client().get(f"{path}/images/0")):
        assert response.status_code == 302
        assert response["Location"].startswith(django_settings.LOGIN_URL + "?next=/approvals/")
    assert grant_of(decision).approved_at is None


def test_anyone_else_signed_in_gets_403_and_the_approval_stays_pending(asked, world, db):
    decision, path, _ = asked
    bob = browser_of(world.bob)
    assert bob.get(path).status_code == 403
    assert bob.post(path, {"decision": "approve"}).status_code == 403
    assert bob.get(f"{path}/images/0").status_code == 403
    staff = Client()
    from django.contrib.auth import get_user_model

    staff.force_login(get_user_model().objects.create_superuser("root", "r@example.com", "pw-123456"))
    assert staff.post(path, {"decision": "approve"}).status_code == 403  # staff without the account, too
    grant = grant_of(decision)
    assert grant.approved_at is None and grant.declined_at is None
    assert not ApprovalDecision.objects.exclude(decision="asked").exists()  # only the asking is recorded


def test_the_page_shows_the_card_and_the_gallery_as_it_would_become(asked, alice_browser):
    decision, path, order = asked
    page = alice_browser.get(path)
    assert page.status_code == 200
    html = page.content.decode()
    assert decision["card"]["title"].replace("“", "&ldquo;") in html or decision["card"]["title"] in html
    assert 'name="decision" value="approve"' in html and 'name="decision" value="decline"' in html
    assert "csrfmiddlewaretoken" in html and 'name="scope" value="session"' in html  # a reorder offers a grant
    sources = IMAGE_SRC.findall(page.content)
    assert len(sources) == len(order)
    for source, item in zip(sources, order, strict=True):
        image = alice_browser.get(source.decode())
        assert image.status_code == 200 and image["Content-Type"] == "image/png"
        assert image.content == thumbnail_of(item)
    for text in ("blobs/", "media", GalleryItem.objects.first().blob.sha256, *order):
        assert text not in html  # no storage key, digest or item id in the page


def test_a_delete_shows_the_images_that_stay(gs, filled, alice_browser):
    items, revision = filled
    decision = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_delete",
                                  {"extension": gs.extension, "items": [items[1]], "revision": revision}).json()
    page = alice_browser.get(page_path(decision["approval_url"]))
    sources = IMAGE_SRC.findall(page.content)
    assert [alice_browser.get(s.decode()).content for s in sources] == [thumbnail_of(items[0]), thumbnail_of(items[2])]


def test_a_member_add_shows_the_people_and_an_id_change_the_old_and_new_id(dsh, session, refs, candidates, world,
                                                                             alice_browser):
    carol = ref_of(candidates, "open-group", "Carol")
    decision = dsh.pre_execute(session, "arkme_group_member_add",
                               {"source_ref": refs["open-group"], "candidate_refs": [carol]}).json()
    html = alice_browser.get(page_path(decision["approval_url"])).content.decode()
    assert re.search(r'<ul class="people"><li>Carol</li></ul>', html)
    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).json()
    html = alice_browser.get(page_path(decision["approval_url"])).content.decode()
    assert f"<strong>{world.alice.arkme_id}</strong> → <strong>alice_2026</strong>" in html


def test_the_form_needs_the_csrf_token(asked, world):
    decision, path, _ = asked
    browser = browser_of(world.alice, enforce_csrf_checks=True)
    assert browser.post(path, {"decision": "approve"}).status_code == 403
    assert grant_of(decision).approved_at is None
    browser.get(path)
    token = browser.cookies[django_settings.CSRF_COOKIE_NAME].value
    approved = browser.post(path, {"decision": "approve", "csrfmiddlewaretoken": token})
    assert approved.status_code == 200 and grant_of(decision).approved_at is not None


def test_decided_and_expired_approvals_show_their_state_and_no_form(asked, alice_browser, gs, filled):
    decision, path, _ = asked
    alice_browser.post(path, {"decision": "approve"})
    approved_at = grant_of(decision).approved_at
    page = alice_browser.get(path).content.decode()
    assert 'data-status="approved"' in page and "<form" not in page and "<img" not in page
    assert alice_browser.get(f"{path}/images/0").status_code == 404  # images only while it is asked
    assert alice_browser.post(path, {"decision": "decline"}).status_code == 200
    grant = grant_of(decision)
    assert (grant.approved_at, grant.declined_at) == (approved_at, None)  # the replay changed nothing
    assert ApprovalDecision.objects.filter(approval=grant).exclude(decision="asked").count() == 1

    items, revision = filled
    late = gs.dsh.pre_execute(gs.session, REORDER, {"extension": gs.extension, "order": items,
                                                    "revision": revision}).json()
    ApprovalGrant.objects.filter(pk=grant_of(late).pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    late_path = page_path(late["approval_url"])
    page = alice_browser.get(late_path).content.decode()
    assert 'data-status="expired"' in page and "<form" not in page
    alice_browser.post(late_path, {"decision": "approve"})
    assert grant_of(late).approved_at is None


def test_a_closed_sessions_approval_reads_expired(asked, alice_browser, gs):
    decision, path, _ = asked
    gs.dsh.delete(f"sessions/{gs.session}")
    assert 'data-status="expired"' in alice_browser.post(path, {"decision": "approve"}).content.decode()
    assert grant_of(decision).approved_at is None


def test_the_session_scope_is_taken_only_where_offered(asked, alice_browser, gs, filled):
    decision, path, _ = asked
    ApprovalGrant.objects.filter(pk=grant_of(decision).pk).update(scopes_offered=["once"])  # a card offering none
    assert 'name="scope"' not in alice_browser.get(path).content.decode()
    alice_browser.post(path, {"decision": "approve", "scope": "session"})
    assert grant_of(decision).scope == ApprovalScope.ONCE
    items, revision = filled
    offered = gs.dsh.pre_execute(gs.session, REORDER, {"extension": gs.extension, "order": items,
                                                       "revision": revision}).json()
    assert offered["card"]["scopes"] == ["once", "session"]
    offered_path = page_path(offered["approval_url"])
    assert 'name="scope" value="session"' in alice_browser.get(offered_path).content.decode()
    alice_browser.post(offered_path, {"decision": "approve", "scope": "session"})
    assert grant_of(offered).scope == ApprovalScope.SESSION


def test_unknown_handles_bad_decisions_and_images_out_of_range(asked, alice_browser):
    decision, path, order = asked
    assert alice_browser.get("/approvals/" + "x" * 43).status_code == 404
    assert alice_browser.get(f"{path}/images/{len(order)}").status_code == 404
    assert alice_browser.post(path, {"decision": "maybe"}).status_code == 400
    assert alice_browser.post(path, {}).status_code == 400
    assert alice_browser.put(path).status_code == 405
    assert grant_of(decision).approved_at is None


def test_the_page_is_never_cached_framed_or_referred(asked, alice_browser):
    _, path, _ = asked
    for response in (alice_browser.get(path), alice_browser.get(f"{path}/images/0")):
        assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
        assert response["X-Frame-Options"] == "DENY"
        assert response["Referrer-Policy"] == "same-origin"
        assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_staff_choose_a_clients_page_tools_in_the_admin(staff, dsh):
    url = f"/admin/conversations/dshclient/{dsh.client.pk}/change/"
    page = staff.get(url).content.decode()
    assert 'value="arkme_group_member_add"' in page and 'value="arkme_context"' not in page
    saved = staff.post(url, {"name": dsh.client.name, "profiles": "[]", "approval_page_tools": [REORDER]})
    assert saved.status_code == 302, saved.content
    dsh.client.refresh_from_db()
    assert dsh.client.approval_page_tools == [REORDER]
    refused = staff.post(url, {"name": dsh.client.name, "profiles": "[]", "approval_page_tools": ["arkme_context"]})
    assert refused.status_code == 200 and "arkme_context" in refused.content.decode()
    refused = staff.post(url, {"name": dsh.client.name, "profiles": "[]", "approval_page_tools": ["*", REORDER]})
    assert refused.status_code == 200 and "stands alone" in refused.content.decode()
    dsh.client.refresh_from_db()
    assert dsh.client.approval_page_tools == [REORDER]
    created = staff.post("/admin/conversations/dshclient/add/", {"name": "paged", "profiles": "[]",
                                                                  "approval_page_tools": ["*"]})
    assert created.status_code == 302, created.content
    assert DshClient.objects.get(name="paged").approval_page_tools == ["*"]
