"""The admin in a real browser: Debian's Chromium driven by Selenium against a live server."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from arkme.accounts.models import Account
from galleries.blobs.services import blobs_store_missing
from galleries.ingest.process_image import process_image
from galleries.models import Blob, GalleryItem, PendingOperation
from galleries.services.extensions import extension_create
from groups.models import Group, JoinPolicy, JoinRequest, Membership
from tests.support import images
from tests.support.browser import BrowserTestCase

pytestmark = pytest.mark.browser


class AdminInABrowser(BrowserTestCase):
    profile = "arkme-chromium"

    def setUp(self):
        User = get_user_model()
        User.objects.create_superuser("staff", "staff@example.com", "staff-pass-123")
        User.objects.create_user("plain", password="plain-pass-123")
        alice = Account.objects.create(display_name="Alice")
        self.extension = extension_create(owner=alice, name="alice-ext")
        shots = [process_image(images.png((400, 400), (200, 20 * i, 20))) for i in range(3)]
        blobs_store_missing(shots)
        for position, shot in enumerate(shots, start=1):
            GalleryItem.objects.create(gallery=self.extension.gallery, blob=Blob.objects.get(sha256=shot.sha256),
                                       position=position)
        dave = Account.objects.create(display_name="Dave")
        group = Group.objects.create(name="approval-group", join_policy=JoinPolicy.APPROVAL)
        self.join_request = JoinRequest.objects.create(group=group, account=dave)

    def sign_in(self, username, password):
        from selenium.webdriver.common.by import By

        self.browser.delete_all_cookies()
        self.browser.get(f"{self.live_server_url}/admin/login/?next=/admin/")
        self.browser.find_element(By.NAME, "username").send_keys(username)
        self.browser.find_element(By.NAME, "password").send_keys(password)
        self.browser.find_element(By.CSS_SELECTOR, "input[type=submit], button[type=submit]").click()
        # The next page has loaded once the login form's page is gone or shows its error.
        self.wait_for(lambda b: "/admin/login/" not in b.current_url or "errornote" in b.page_source)

    def wait_for(self, condition):
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(self.browser, 15).until(condition)

    def test_staff_sees_thumbnails_filters_operations_and_approves_a_join_request(self):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select

        self.sign_in("staff", "staff-pass-123")
        self.browser.get(f"{self.live_server_url}/admin/galleries/extension/{self.extension.pk}/change/")
        widths = self.browser.execute_script(
            "return Array.from(document.querySelectorAll('img[src*=\"/image/\"]'))"
            ".map(i => i.complete ? i.naturalWidth : -1);")
        self.assertEqual(len(widths), 3)
        self.assertTrue(all(width > 0 for width in widths), widths)
        self.figures.add("browser_thumbnails_loaded", len(widths))

        self.browser.get(f"{self.live_server_url}/admin/galleries/pendingoperation/")
        self.browser.find_element(By.LINK_TEXT, "Pending").click()
        self.wait_for(lambda b: "status__exact=pending" in b.current_url)
        self.assertEqual(PendingOperation.objects.count(), 0)

        self.browser.get(f"{self.live_server_url}/admin/groups/joinrequest/")
        self.browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{self.join_request.pk}']").click()
        Select(self.browser.find_element(By.NAME, "action")).select_by_value("approve")
        self.browser.find_element(By.NAME, "index").click()
        self.wait_for(lambda b: "Approved 1 request" in b.page_source)
        self.assertTrue(Membership.objects.filter(group=self.join_request.group, account=self.join_request.account).exists())

    def test_the_audit_reads_without_scrolling_sideways_at_1400_px(self):
        from arkme.conversations.clients import dsh_client_create
        from arkme.conversations.models import AgentSession
        from toolregistry.models import ToolCall

        client, _ = dsh_client_create(name="a-dsh-client-with-a-long-descriptive-name")
        session = AgentSession.objects.create(client=client, account=Account.objects.get(display_name="Alice"),
                                              profile="business")
        for outcome, status in (("ok", 200), ("idempotency_key_reused", 409), ("server_error", 500)):
            ToolCall.objects.create(session=session, session_public_id=session.public_id,
                                    tool_name="arkme_extension_preview_reorder", tool_id="arkme.extension_preview.reorder@1",
                                    outcome=outcome, http_status=status, duration_ms=1234, replayed=True,
                                    surface="mcp", request_id="f" * 32)
        self.browser.set_window_size(1400, 900)
        self.sign_in("staff", "staff-pass-123")
        self.browser.get(f"{self.live_server_url}/admin/toolregistry/toolcall/?outcome=errors")
        page = self.browser.page_source
        for shown in ("idempotency_key_reused · 409", "1234 ms", "Alice", "a-dsh-client-with-a-long-descriptive-name",
                      "ffffffffffff"):
            self.assertIn(shown, page)
        self.assertNotIn(">ok · 200", page)  # the errors-only filter
        overflow = self.browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
        self.assertLessEqual(overflow, 0, "the audit list scrolls sideways at 1400 px")

    def test_the_dashboard_draws_its_charts_with_data(self):
        from datetime import timedelta

        from django.conf import settings as django_settings
        from django.utils import timezone

        from arkme.conversations.clients import dsh_client_create
        from arkme.conversations.models import AgentSession
        from toolregistry.models import ToolCall
        from toolregistry.rollups import tool_calls_roll_up

        client, _ = dsh_client_create(name="dashboard-dsh")
        session = AgentSession.objects.create(client=client, account=Account.objects.get(display_name="Alice"),
                                              profile="business")
        now = timezone.now()
        for hours_ago in range(12):
            for index in range(5 + hours_ago % 4):
                call = ToolCall.objects.create(
                    session=session, session_public_id=session.public_id,
                    tool_name=("arkme_context", "arkme_group_member_candidates")[index % 2],
                    outcome="ok" if index % 4 else "revision_conflict", http_status=200 if index % 4 else 409,
                    duration_ms=20 * (index + hours_ago), surface=("rest", "mcp")[index % 2])
                ToolCall.objects.filter(pk=call.pk).update(created_at=now - timedelta(hours=hours_ago))
        tool_calls_roll_up(since=now - timedelta(hours=12))
        self.browser.set_window_size(1400, 1800)
        self.sign_in("staff", "staff-pass-123")
        self.browser.get(f"{self.live_server_url}/admin/")
        from selenium.webdriver.common.by import By

        self.browser.find_element(By.LINK_TEXT, "Operations dashboard").click()
        self.wait_for(lambda b: "/admin/dashboard/" in b.current_url)
        drawn = self.browser.execute_script(
            "return Array.from(document.querySelectorAll('svg.arkme-chart')).map(svg => "
            "Array.from(svg.querySelectorAll('rect.bar, circle.point'))"
            ".filter(e => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().height > 0).length);")
        # The eight of the audit, HTTP answers by status class, and throttled calls by tool.
        self.assertEqual(len(drawn), 10)
        # Calls by outcome (a bar per outcome an hour), error rate, latency and calls by tool.
        self.assertGreaterEqual(drawn[0], 12)
        self.assertTrue(all(count > 0 for count in drawn[1:4]), drawn)
        folder = django_settings.BASE_DIR / "var" / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        shot = folder / "admin-dashboard.png"
        self.browser.save_screenshot(str(shot))
        self.assertTrue(shot.read_bytes().startswith(b"\x89PNG"))
        self.figures.add("browser_dashboard_charts_drawn", sum(1 for count in drawn if count))

    def test_a_non_staff_user_is_turned_away(self):
        self.sign_in("plain", "plain-pass-123")
        self.assertIn("/admin/login/", self.browser.current_url)
        self.assertIn("staff account", self.browser.page_source)
        self.browser.get(f"{self.live_server_url}/admin/galleries/blob/{Blob.objects.first().pk}/image/")
        self.assertIn("/admin/login/", self.browser.current_url)
