"""Debian's headless Chromium driven by Selenium against a live server, for the tests of
Arkme's own pages (the admin, the approval page)."""
from __future__ import annotations

import os
import shutil

import pytest
from django.contrib.staticfiles.testing import StaticLiveServerTestCase

from tests.support.services import require_service

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


class BrowserTestCase(StaticLiveServerTestCase):
    """A live server and one Chromium for the class (``self.browser``), its profile in a folder
    of its own (``profile``); the run's figures as ``self.figures``."""

    profile = "arkme-chromium"

    @pytest.fixture(autouse=True)
    def _figures(self, figures):
        self.figures = figures

    @classmethod
    def setUpClass(cls):
        require_service("Chromium", bool(CHROMIUM and CHROMEDRIVER), "apt-get install chromium chromium-driver")
        super().setUpClass()
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--disable-quic", f"--user-data-dir=/tmp/{cls.profile}-{os.getpid()}"):
            options.add_argument(flag)
        cls.browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        cls.browser.implicitly_wait(5)

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        super().tearDownClass()
