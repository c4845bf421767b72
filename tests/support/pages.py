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
