"""Arkme's approval page in tests: accounts signed in to Arkme, and the page's handle."""
from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.test import Client

from arkme.accounts.models import Account


def sign_in_user(account: Account) -> str:
    """Give ``account`` a Django user (its sign-in for Arkme's pages, signed in with
    ``force_login``: it has no usable password); returns the username."""
    username = f"user-{account.public_id}"
    if account.user_id is None:
        account.user = get_user_model().objects.create_user(username)
        account.save(update_fields=["user"])
    return account.user.get_username()


def browser_of(account: Account, **client_options) -> Client:
    """A browser signed in as ``account``."""
    client = Client(**client_options)
    sign_in_user(account)
    client.force_login(account.user)
    return client


def page_path(approval_url: str) -> str:
    """The path of an ``approval_url`` (the test client takes paths)."""
    return urlsplit(approval_url).path


def handle_of(approval_url: str) -> str:
    return page_path(approval_url).rsplit("/", 1)[-1]


def _cookies(response) -> dict[str, str]:
    return {name: value for name, value in response.cookies.items()}


def page_answer_over_http(base_url: str, username: str, password: str, approval_url: str,
                          decision: str = "approve") -> int:
    """Sign in to Arkme at ``base_url`` (any web node) as a browser does, open the approval page
    of ``approval_url`` there and post ``decision`` with the page's CSRF token; the status of the
    answer. Cookies are sent by hand: the stack may mark them Secure, over plain HTTP."""
    import re

    import httpx

    page = base_url.rstrip("/") + page_path(approval_url)
    token = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')
    with httpx.Client(timeout=30, follow_redirects=False) as http:
        login = http.get(f"{base_url}/accounts/login/")
        jar = _cookies(login)
        signed_in = http.post(f"{base_url}/accounts/login/", headers={"Cookie": _header(jar)}, data={
            "username": username, "password": password,
            "csrfmiddlewaretoken": token.search(login.content).group(1).decode()})
        assert signed_in.status_code == 302, signed_in.text[:200]
        jar.update(_cookies(signed_in))
        shown = http.get(page, headers={"Cookie": _header(jar)})
        assert shown.status_code == 200, shown.status_code
        jar.update(_cookies(shown))
        answered = http.post(page, headers={"Cookie": _header(jar)}, data={
            "decision": decision, "csrfmiddlewaretoken": token.search(shown.content).group(1).decode()})
        return answered.status_code


def _header(jar: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in jar.items())
