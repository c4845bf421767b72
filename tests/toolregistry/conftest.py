"""Fixtures of the approval page's tests."""
from __future__ import annotations

import pytest

from tests.support.pages import browser_of


@pytest.fixture
def filled(gs):
    """Alice's gallery with three items: their ids in order, and its revision."""
    body = gs.add_confirmed(gs.write_many(3))
    return [item["item"] for item in body["gallery"]["items"]], body["gallery"]["revision"]


@pytest.fixture
def alice_browser(world):
    """A browser signed in to Arkme as alice."""
    return browser_of(world.alice)
