"""A user's extensions from 1 to 50: ``arkme_context`` and the session view as the count grows.

``arkme_context`` lists every extension with its gallery (four images each here), so its cost
grows with the extensions; the figure is the cost one more extension adds over the curve's
upper half (25 → 50) against its lower half (1 → 25) (``bench/curves.py``), each call through
the product's WSGI handler and URLconf, as gunicorn calls it. The session view does not list
extensions, so its time at 50 against 1 must stay flat. Statements per call are counted at
every size and must not grow. In-process, on the embedded default (SQLite).
"""
from __future__ import annotations

import json

from .common import Result
from .curves import GOAL, curve_seconds, marginal_ratio

SIZES = (1, 10, 25, 50)
BOTTOM, TOP = (1, 25), (25, 50)
ITEMS = 4
FLAT = 1.5  # the session view: the same work at 50 as at 1, within this machine's spread


def world(sizes: tuple[int, ...] = SIZES) -> tuple[str, dict[int, str]]:
    """A client key and, per size, a session of an account with that many extensions."""
    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.sessions import session_open
    from galleries.models import Blob, GalleryItem
    from galleries.services.extensions import extension_create

    client, key = dsh_client_create(name="bench-extensions")
    blobs = Blob.objects.bulk_create([Blob(sha256=f"{i:064x}", size=1000 + i, width=640, height=480, format="png")
                                      for i in range(ITEMS)])
    sessions = {}
    for size in sizes:
        owner = Account.objects.create(display_name=f"Extensions {size}")
        for i in range(size):
            gallery = extension_create(owner=owner, name=f"Extension {i}").gallery
            GalleryItem.objects.bulk_create([GalleryItem(gallery=gallery, blob=b, position=p + 1)
                                             for p, b in enumerate(blobs)])
        sessions[size] = session_open(client=client, account=owner.public_id).public_id
    return key, sessions


def calls(key: str, sessions: dict[int, str]) -> tuple[dict, dict]:
    """Per size, an ``arkme_context`` call through execute and a session view, each checked."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def context(session: str, size: int):
        def call() -> None:
            response = client.post(f"/dsh/v1/sessions/{session}/tools/arkme_context/execute",
                                   b'{"arguments": {}}', content_type="application/json")
            if response.status_code != 200 or len(json.loads(response.content)["result"]["extensions"]) != size:
                raise RuntimeError(f"arkme_context answered {response.status_code}: {response.content[:300]!r}")
        return call

    def view(session: str):
        def call() -> None:
            response = client.get(f"/dsh/v1/sessions/{session}")
            if response.status_code != 200:
                raise RuntimeError(f"the session view answered {response.status_code}")
        return call

    return ({size: context(s, size) for size, s in sessions.items()},
            {size: view(s) for size, s in sessions.items()})


def statements(call) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def run(*, rounds: int = 41) -> Result:
    key, sessions = world()
    context, view = calls(key, sessions)
    counts = {size: statements(context[size]) for size in SIZES}
    context_s = curve_seconds(context, SIZES, rounds=rounds)
    view_s = curve_seconds(view, (SIZES[0], SIZES[-1]), rounds=rounds)
    marginal = marginal_ratio(context_s, BOTTOM, TOP)
    flat = view_s[SIZES[-1]] / view_s[SIZES[0]]
    met = marginal <= GOAL and flat <= FLAT and len(set(counts.values())) == 1
    per_extension = {f"{low}→{high}": f"{(context_s[high] - context_s[low]) / (high - low) * 1e6:.0f} µs"
                     for low, high in (BOTTOM, TOP)}
    return Result(
        "extensions_growth", round(marginal, 3), "× the cost an extension adds, 25→50 against 1→25",
        f"arkme_context through execute, {ITEMS} images an extension, itself over the lower half of the curve",
        f"≤ {GOAL:g}× per extension; session view ≤ {FLAT:g}× at 50 against 1; statements the same at every size",
        met, {"arkme_context ms": {size: round(t * 1000, 3) for size, t in sorted(context_s.items())},
              "cost an extension adds": per_extension,
              "session view": f"{flat:.2f}× at {SIZES[-1]} against {SIZES[0]} extensions "
                              f"({view_s[SIZES[-1]] * 1e6:.0f} against {view_s[SIZES[0]] * 1e6:.0f} µs)",
              "statements a call": counts})
