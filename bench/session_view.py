"""GET sessions/{s} through the full stack (auth, session, cached compile) against a bare DRF
view that authenticates and reads one row, both through Django's WSGI handler in-process."""
from __future__ import annotations

from .common import Result, paired_medians

REQUESTS = 300


def run() -> Result:
    from django.test import Client

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.sessions import session_open

    client, key = dsh_client_create(name="bench-session-view")
    account = Account.objects.create(display_name="Bench")
    session = session_open(client=client, account=account.public_id).public_id
    http = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def full():
        for _ in range(REQUESTS):
            assert http.get(f"/dsh/v1/sessions/{session}").status_code == 200

    def bare():
        for _ in range(REQUESTS):
            assert http.get(f"/bench/bare/{session}").status_code == 200

    product, baseline = paired_medians(full, bare)
    ratio = product / baseline
    return Result("session_view", round(ratio, 3), "× bare view", "a bare DRF view that authenticates and reads one row",
                  "≤ 1.2×", ratio <= 1.2, {"product_ms": round(product / REQUESTS * 1000, 3),
                                             "baseline_ms": round(baseline / REQUESTS * 1000, 3)})
