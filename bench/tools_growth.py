"""Tools per profile from 7 to 32 to 128 (``bench/mcp_tools.py``: the shipped tools again under
numbered names, with their real schemas), in-process:

- the cold compile of a session's toolset (validators, definitions, the pre-serialised view
  fragment), on a fresh registrar each round;
- ``GET sessions/{s}`` through Django and DRF with the toolset compiled, as served;
- ``GET catalog``, whose body is encoded once per catalog.

Each is the time at 128 tools against 7. Linear growth would be 128/7 = 18.3×; the goal is
linear or better for the compile and the session view, and no rebuild per call for the
catalog (its time may grow only with the bytes it sends: ≤ linear, and measured far below).
"""
from __future__ import annotations

import statistics
import time

from .common import Result, median_seconds

REQUESTS = 200
LINEAR = 128 / 7


def _compile_seconds(n: int) -> float:
    from . import mcp_tools

    times = []
    for _ in range(15):
        registrar = mcp_tools.registrar(n)
        started = time.perf_counter()
        registrar.toolset(mcp_tools.PROFILE, mcp_tools.PHASES)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run() -> Result:
    from django.test import Client

    import toolregistry.toolsets
    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.sessions import session_open, session_set_attachments
    from toolregistry.api import views

    from . import mcp_tools

    client, key = dsh_client_create(name="bench-tools-growth")
    account = Account.objects.create(display_name="Bench")
    session = session_open(client=client, account=account.public_id, profile=mcp_tools.PROFILE).public_id
    session_set_attachments(client=client, public_id=session, mounted=True)
    http = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    shipped_registrar, shipped_catalog = toolregistry.toolsets.registrar, views.CATALOG
    rows = {}
    try:
        for n in mcp_tools.SIZES:
            registrar = mcp_tools.registrar(n)
            toolregistry.toolsets.registrar = registrar
            views.CATALOG = registrar.catalog
            listed = http.get(f"/dsh/v1/sessions/{session}").json()["tools"]
            assert len(listed) == n, (n, len(listed))
            assert len(http.get("/dsh/v1/catalog").json()["tools"]) == n

            def view() -> None:
                for _ in range(REQUESTS):
                    http.get(f"/dsh/v1/sessions/{session}")

            def catalog() -> None:
                for _ in range(REQUESTS):
                    http.get("/dsh/v1/catalog")

            rows[n] = {"compile_ms": _compile_seconds(n) * 1000,
                       "session_view_ms": median_seconds(view) / REQUESTS * 1000,
                       "catalog_ms": median_seconds(catalog) / REQUESTS * 1000}
    finally:
        toolregistry.toolsets.registrar, views.CATALOG = shipped_registrar, shipped_catalog
    small, large = rows[mcp_tools.SIZES[0]], rows[mcp_tools.SIZES[-1]]
    ratios = {name: round(large[name] / small[name], 2) for name in small}
    worst = max(ratios.values())
    return Result("tools_growth", worst, "× time at 128 tools against 7 (worst of three)", "itself at 7 tools",
                  f"≤ {LINEAR:.1f}× (linear) for each", worst <= LINEAR,
                  {"ratios": ratios, **{f"at_{n}": {k: round(v, 3) for k, v in row.items()} for n, row in rows.items()}})
