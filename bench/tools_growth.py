"""Tools per profile from 7 to 28 to 126: the shipped tools a hybrid session with attachments
sees, once, four times and eighteen times over (each again under numbered names, with its
real schema, description and metadata), so that every size is the same mix of tools and a
ratio between sizes shows growth, never a change of mix. In-process:

- the cold compile of a session's toolset (validators, definitions, the pre-serialised view
  fragment), on a fresh registrar each time;
- ``GET sessions/{s}`` through Django and DRF with the toolset compiled, as served;
- ``GET catalog``, whose body is encoded once per catalog.

Each is read per tool: its cost at 126 tools against 7, over 18 (``per_tool``). Linear growth
means a tool costs at 126 what it costs at 7, which reads 1.0× per tool; a part of the cost
that does not grow with the tools (the request, the toolset's own record) reads below it, and
work that grows faster than the tools (a list walked once per tool) reads above it, by about
the sizes' ratio for a quadratic part. The goal is linear or better for each.

Timed here in CPU time of this process, every size once a round (as ``bench/curves.py``), so
the machine's other programs and its drift fall on every size alike; gated at the goal past
the machine's spread between runs (``SERVED_SPREAD``). The strict goal is held by
``ir_tools_growth``, the same sizes counted in instructions (``bench/counted.py``).
"""
from __future__ import annotations

import statistics
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Callable

from .common import SERVED_SPREAD, Result, served_at_most

if TYPE_CHECKING:
    from toolregistry.metadata import ToolModule
    from toolregistry.registrar import Registrar

# Copies of the unit (the shipped tools a hybrid session with attachments sees) at each size.
UNITS = (1, 4, 18)
GOAL = 1.0  # × per tool: linear
REQUESTS = 200
ROUNDS = 41


def unit() -> tuple[ToolModule, ...]:
    """The shipped modules a session of the benchmarks' profile and phases sees."""
    from toolregistry.catalog import CATALOG

    from . import mcp_tools

    return CATALOG.visible(mcp_tools.PROFILE, mcp_tools.PHASES)


def modules(units: int) -> list[SimpleNamespace]:
    """The unit ``units`` times over, each module under its own numbered name."""
    from . import mcp_tools

    shipped = unit()
    return [mcp_tools._copy(module, copy * len(shipped) + index)
            for copy in range(units) for index, module in enumerate(shipped)]


def registrar(units: int) -> Registrar:
    from toolregistry.catalog import PROFILE_KINDS, Catalog
    from toolregistry.registrar import Registrar

    return Registrar(Catalog(modules=tuple(modules(units)), profile_kinds=PROFILE_KINDS, guidance=()))


def per_tool(large: float, small: float) -> float:
    """The cost of a tool at the largest size against the smallest: linear reads 1.0."""
    return large / small / (UNITS[-1] / UNITS[0])


def _rounds(calls: dict[int, Callable[[], object]], before: Callable[[int], object] | None = None) -> dict[int, float]:
    """Each size's median CPU time over ``ROUNDS`` rounds after two, every size once a round;
    ``before(size)``, untimed, runs before each call."""
    times: dict[int, list[float]] = {size: [] for size in calls}
    for round_ in range(2 + ROUNDS):
        for size, call in calls.items():
            if before is not None:
                before(size)
            started = time.process_time()
            call()
            elapsed = time.process_time() - started
            if round_ >= 2:
                times[size].append(elapsed)
    return {size: statistics.median(found) for size, found in times.items()}


def _compile_seconds() -> dict[int, float]:
    from . import mcp_tools

    fresh = {units: iter([registrar(units) for _ in range(2 + ROUNDS)]) for units in UNITS}

    def compile_one(units: int) -> Callable[[], object]:
        return lambda: next(fresh[units]).toolset(mcp_tools.PROFILE, mcp_tools.PHASES)

    return _rounds({units: compile_one(units) for units in UNITS})


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
    tools = {units: units * len(unit()) for units in UNITS}
    registrars = {units: registrar(units) for units in UNITS}
    shipped_registrar, shipped_catalog = toolregistry.toolsets.registrar, views.CATALOG

    def install(units: int) -> None:
        toolregistry.toolsets.registrar, views.CATALOG = registrars[units], registrars[units].catalog
        http.get("/dsh/v1/catalog")  # encodes this size's catalog once, untimed

    def requests(path: str) -> Callable[[], object]:
        def call() -> None:
            for _ in range(REQUESTS):
                http.get(path)
        return call

    try:
        for units in UNITS:
            install(units)
            assert len(http.get(f"/dsh/v1/sessions/{session}").json()["tools"]) == tools[units]
            assert len(http.get("/dsh/v1/catalog").json()["tools"]) == tools[units]
        costs = {
            "compile_ms": _compile_seconds(),
            "session_view_ms": _rounds({u: requests(f"/dsh/v1/sessions/{session}") for u in UNITS}, install),
            "catalog_ms": _rounds({u: requests("/dsh/v1/catalog") for u in UNITS}, install),
        }
    finally:
        toolregistry.toolsets.registrar, views.CATALOG = shipped_registrar, shipped_catalog
    scale = {"compile_ms": 1.0, "session_view_ms": REQUESTS, "catalog_ms": REQUESTS}
    small, large = UNITS[0], UNITS[-1]
    ratios = {name: round(per_tool(cost[large], cost[small]), 3) for name, cost in costs.items()}
    worst = max(ratios.values())
    return Result("tools_growth", worst, f"× CPU time per tool at {tools[large]} tools against {tools[small]} (worst)",
                  f"itself at {tools[small]} tools (the same mix: the shipped tools once, then {large} times)",
                  f"≤ {GOAL:g}× per tool (linear) for each", served_at_most(worst, GOAL),
                  {"per tool": ratios,
                   "gate": f"≤ {GOAL * (1 + SERVED_SPREAD):.2f}× (the goal past the machine's "
                           f"{SERVED_SPREAD:.0%} spread between runs; counted in instructions by ir_tools_growth)",
                   **{f"at {tools[u]} tools": {name: round(cost[u] * 1000 / scale[name], 3)
                                               for name, cost in costs.items()} for u in UNITS}})
