"""Arkme's approval page in a real browser: Debian's Chromium driven by Selenium against a live
server, with DSH's calls made over HTTP to the same server. The account signs in, sees the
gallery as the reorder would leave it (the images load) and approves; execute then runs. Another
signed-in account gets 403, and its approval stays pending."""
from __future__ import annotations

import pytest
import requests
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from arkme.accounts.models import Account
from arkme.conversations.clients import dsh_client_create
from galleries.blobs.services import blobs_store_missing
from galleries.ingest.process_image import process_image
from galleries.models import Blob, GalleryItem
from galleries.services.extensions import extension_create
from tests.support import images
from tests.support.browser import BrowserTestCase

pytestmark = pytest.mark.browser
REORDER = "arkme_extension_preview_reorder"


class ApprovalPageInABrowser(BrowserTestCase):
    profile = "arkme-chromium-page"

    def setUp(self):
        users = get_user_model().objects
        self.alice = Account.objects.create(display_name="Alice", user=users.create_user("alice", password="alice-pass-123"))
        Account.objects.create(display_name="Bob", user=users.create_user("bob", password="bob-pass-123"))
        self.extension = extension_create(owner=self.alice, name="alice-ext")
        shots = [process_image(images.png((400, 400), (200, 60 * i, 20))) for i in range(3)]
        blobs_store_missing(shots)
        for position, shot in enumerate(shots, start=1):
            GalleryItem.objects.create(gallery=self.extension.gallery, blob=Blob.objects.get(sha256=shot.sha256),
                                       position=position)
        client, key = dsh_client_create(name="paged-dsh")
        client.approval_page_tools = [REORDER]
        client.save()
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"
        opened = self.http.post(self.api("sessions"), json={"account": self.alice.public_id}, timeout=30)
        self.assertEqual(opened.status_code, 201, opened.text)
        self.session = opened.json()["session"]

    def tearDown(self):
        self.http.close()

    def api(self, path: str) -> str:
        return f"{self.live_server_url}/dsh/v1/{path}"

    def call(self, step: str, arguments: dict, **body) -> requests.Response:
        return self.http.post(self.api(f"sessions/{self.session}/tools/{REORDER}/{step}"),
                              json={"arguments": arguments, **body}, timeout=30)

    def reorder_arguments(self) -> dict:
        gallery = self.extension.gallery
        gallery.refresh_from_db()
        items = list(gallery.items.order_by("position").values_list("public_id", flat=True))
        return {"extension": self.extension.public_id, "order": list(reversed(items)), "revision": gallery.revision}

    def wait_for(self, condition):
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(self.browser, 15).until(condition)

    def open_signed_in(self, url: str, username: str, password: str) -> None:
        """Open ``url`` as a visitor: the page sends them to sign in, and back once they have."""
        from selenium.webdriver.common.by import By

        self.browser.delete_all_cookies()
        self.browser.get(url)
        self.wait_for(lambda b: "/accounts/login/" in b.current_url)
        self.browser.find_element(By.NAME, "username").send_keys(username)
        self.browser.find_element(By.NAME, "password").send_keys(password)
        self.browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.wait_for(lambda b: b.current_url == url)

    def test_the_account_sees_the_images_and_approves_then_execute_runs(self):
        from selenium.webdriver.common.by import By

        arguments = self.reorder_arguments()
        decision = self.call("pre-execute", arguments).json()
        url = decision["approval_url"]
        self.assertTrue(url.startswith(f"{self.live_server_url}/approvals/"), url)
        self.open_signed_in(url, "alice", "alice-pass-123")
        self.wait_for(lambda b: b.execute_script(
            "return Array.from(document.querySelectorAll('ol.images img')).every(i => i.complete);"))
        widths = self.browser.execute_script(
            "return Array.from(document.querySelectorAll('ol.images img')).map(i => i.naturalWidth);")
        self.assertEqual(len(widths), 3)
        self.assertTrue(all(width > 0 for width in widths), widths)
        self.figures.add("browser_approval_images_loaded", len(widths))
        folder = django_settings.BASE_DIR / "var" / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        self.browser.set_window_size(900, 800)
        self.browser.save_screenshot(str(folder / "approval-page.png"))

        pending = self.call("execute", arguments, approval=decision["approval"])
        self.assertEqual((pending.status_code, pending.json()["error"]["code"]), (403, "approval_pending"))
        self.browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=approve]").click()
        self.wait_for(lambda b: 'data-status="approved"' in b.page_source)
        status = self.http.get(self.api(f"sessions/{self.session}/approvals/{decision['approval']}"), timeout=30)
        self.assertEqual(status.json(), {"status": "approved"})

        ran = self.call("execute", arguments, approval=decision["approval"])
        self.assertEqual(ran.status_code, 200, ran.text)
        self.assertEqual([item["item"] for item in ran.json()["result"]["gallery"]["items"]], arguments["order"])
        again = self.call("execute", arguments, approval=decision["approval"])
        self.assertEqual(again.status_code, 403, again.text)

    def test_another_signed_in_account_gets_403_and_the_approval_stays_pending(self):
        arguments = self.reorder_arguments()
        decision = self.call("pre-execute", arguments).json()
        self.open_signed_in(decision["approval_url"], "bob", "bob-pass-123")
        self.assertIn("403 Forbidden", self.browser.page_source)
        self.assertNotIn("<form", self.browser.page_source)
        status = self.http.get(self.api(f"sessions/{self.session}/approvals/{decision['approval']}"), timeout=30)
        self.assertEqual(status.json(), {"status": "pending"})
        refused = self.call("execute", arguments, approval=decision["approval"])
        self.assertEqual((refused.status_code, refused.json()["error"]["code"]), (403, "approval_pending"))
