"""The benchmark harness: its JSON, its skips, and the baselines it serves beside the product.

No timing is asserted here; the figures themselves are for ``make bench``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from groups.refs import read_candidate_ref
from toolregistry.models import ToolCall

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_KEYS = {"name", "value", "unit", "baseline", "goal"}


def bench(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARKME_BENCH_DATABASE_URL")}
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)


def test_postgres_figures_skip_with_a_reason_without_database_url():
    figures = json.loads(bench("--json", "--only", "candidates_growth", "web_serving").stdout)
    assert [f["name"] for f in figures] == ["candidates_growth", "web_serving"]
    for figure in figures:
        assert CONTRACT_KEYS <= set(figure)
        assert figure["value"] is None and figure["goal"] and figure["baseline"]
        assert "DATABASE_URL" in figure["skipped"]


def test_the_table_names_every_figure_it_ran():
    table = bench("--only", "candidates_growth", "web_serving").stdout.splitlines()
    assert table[0].split()[:2] == ["name", "value"]
    figures = [line for line in table[1:-1] if not line.startswith(" ")]
    assert [line.split()[0] for line in figures] == ["candidates_growth", "web_serving"]
    assert all("skipped: needs PostgreSQL" in line for line in figures)
    # Each figure says what it is measured against: its floor or its peer.
    assert table[-1] == "bench: 2 figures, 0 met, 0 missed, 2 skipped (candidates_growth, web_serving)"
    against = [line.strip() for line in table[1:] if line.startswith(" ")]
    assert against == ["against: itself at a tenth of the chats",
                       "against: its floor view in the same server (raw SQL, the same writes); candidates also the bare"
                       " view"]


def test_an_unknown_figure_is_refused_by_name():
    with pytest.raises(subprocess.CalledProcessError) as refused:
        bench("--only", "no_such_figure")
    assert "unknown figure no_such_figure" in refused.value.stderr


def test_an_unknown_option_is_refused():
    with pytest.raises(subprocess.CalledProcessError) as refused:
        bench("--bogus")
    assert "usage: python -m bench" in refused.value.stderr


@pytest.fixture
def bench_urls(settings):
    settings.ROOT_URLCONF = "bench.urls"
    settings.MIDDLEWARE = ["bench.middleware.floors", *settings.MIDDLEWARE]


def test_the_floor_view_does_the_work_of_a_candidates_call(bench_urls, dsh, session, refs, world):
    """The throughput yardstick is only honest while it returns what the product returns."""
    arguments = {"source_ref": refs["approval-group"]}
    calls = ToolCall.objects.count()
    product = dsh.execute(session, "arkme_group_member_candidates", arguments)
    floor = dsh.api.post(f"/bench/floor/{session}/candidates", {"arguments": arguments}, format="json")
    assert product.status_code == floor.status_code == 200
    assert ToolCall.objects.count() == calls + 2  # each audited once
    rows = ToolCall.objects.order_by("-id")[:2]
    assert len({(r.tool_name, r.tool_id, r.outcome, r.http_status) for r in rows}) == 1

    def chats(body):
        result = body["result"]
        handles = [read_candidate_ref(c["candidate_ref"], account_public_id=world.alice.public_id,
                                      group_public_id=world.approval_group.public_id)
                   for c in result["candidates"]]
        listed = [{k: v for k, v in c.items() if k != "candidate_ref"} for c in result["candidates"]]
        return {**result, "candidates": listed}, handles

    assert chats(floor.json()) == chats(product.json())
    sizes = [body.json()["result"]["group"]["member_count"] for body in (product, floor)]
    assert [type(size) for size in sizes] == [int, int]  # a count, not the membership flag
    assert len(chats(product.json())[1]) == 3


def test_the_bare_view_reads_only_the_callers_session(bench_urls, dsh, other_dsh, session):
    assert dsh.api.get(f"/bench/bare/{session}").json()["public_id"] == session
    assert other_dsh.api.get(f"/bench/bare/{session}").status_code == 404
    stranger = APIClient(HTTP_AUTHORIZATION="Bearer dsh_wrong")
    assert stranger.get(f"/bench/bare/{session}").status_code == 404


def test_the_svg_figures_worker_consumes_the_queue_renders_are_routed_to(settings):
    # A worker on another queue never answers, and the figure fails after its wait instead of
    # measuring the production path.
    from bench.svg_normalise import RENDER_QUEUE

    assert settings.CELERY_TASK_ROUTES["galleries.render_svg"]["queue"] == RENDER_QUEUE
    procfile = (Path(__file__).resolve().parents[2] / "Procfile").read_text()
    render_line = next(line for line in procfile.splitlines() if line.startswith("render:"))
    assert f"-Q {RENDER_QUEUE}" in render_line


def test_candidates_growth_counts_members_over_the_products_window_at_every_size(settings):
    # A density over more chats than the smallest scene has gives the larger scene more
    # members, and a cell then measures the members, not the chats (docs/PERFORMANCE.md).
    from bench.candidates_growth import RECENT, SIZES

    assert RECENT == settings.ARKME_CANDIDATE_RECENT_CHATS <= min(SIZES)
