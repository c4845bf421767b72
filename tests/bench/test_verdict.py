"""The gate: ``python -m bench`` exits non-zero when a figure misses its goal, says so in its
last line, and counts skipped figures apart. Fake results only: no benchmark runs here."""
from __future__ import annotations

import pytest

import bench.__main__ as harness
from bench.verdict import verdict


def _figure(name: str, met: bool | None, skipped: str | None = None) -> dict:
    found = {"name": name, "value": None if skipped else 1.0, "unit": "×", "baseline": "b", "goal": "≤ 1.1×",
             "met": met}
    if skipped:
        found["skipped"] = skipped
    return found


def test_a_miss_fails_and_is_named():
    code, line = verdict([_figure("a", True), _figure("tools_growth", False), _figure("c", True)])
    assert code == 1
    assert line == "bench: 3 figures, 2 met, 1 missed (tools_growth)"


def test_all_met_passes():
    assert verdict([_figure("a", True), _figure("b", True)]) == (0, "bench: 2 figures, 2 met, 0 missed")


def test_a_skipped_figure_is_no_miss_but_is_reported():
    code, line = verdict([_figure("a", True), _figure("web_serving", None, "needs PostgreSQL")])
    assert code == 0
    assert line == "bench: 2 figures, 1 met, 0 missed, 1 skipped (web_serving)"


def test_a_figure_without_a_verdict_is_a_miss():
    assert verdict([_figure("a", None)])[0] == 1


@pytest.fixture
def fake_figures(monkeypatch):
    """Every figure answers from a table instead of measuring."""
    outcomes: dict[str, bool] = {}

    def run_here(module: str) -> dict:
        name = next(n for n, m, _ in harness.ORDER if m == module)
        return _figure(name, outcomes.get(name, True))

    monkeypatch.setattr(harness, "_run_here", run_here)
    def counted(names: list[str], *, quick: bool = False) -> list[dict]:
        outcomes["quick"] = quick
        return [_figure(n, outcomes.get(n, True)) for n in names]

    monkeypatch.setattr(harness, "_counted", counted)
    monkeypatch.setattr(harness, "_postgres_url", lambda: None)
    return outcomes


def test_the_exit_code_follows_the_verdict(fake_figures, capsys):
    assert harness.main(["--only", "tools_growth", "ir_session_view"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "bench: 2 figures, 2 met, 0 missed"
    fake_figures["tools_growth"] = False
    assert harness.main(["--only", "tools_growth", "ir_session_view"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "bench: 2 figures, 1 met, 1 missed (tools_growth)"


def test_every_figure_is_reachable_by_its_own_name(fake_figures, capsys):
    for name, _, _ in harness.ORDER:
        harness.main(["--json", "--only", name])
        assert [f["name"] for f in __import__("json").loads(capsys.readouterr().out)] == [name]


def test_a_figure_that_fails_to_run_is_a_miss(fake_figures, monkeypatch, capsys):
    def broken(module: str) -> dict:
        raise RuntimeError("the server did not start")

    monkeypatch.setattr(harness, "_run_here", broken)
    assert harness.main(["--only", "tools_growth"]) == 1
    assert "the server did not start" in capsys.readouterr().out


def test_the_ci_subset_is_the_instruction_counted_figures(fake_figures, capsys):
    assert harness.CI == ["ir_session_view", "ir_session_304", "ir_session_stale", "ir_arkme_context",
                          "ir_keyed_execute", "ir_candidates", "ir_mcp_tools_call", "ir_mcp_tools_list",
                          "ir_tools_growth", "ir_prepare_confirm"]
    assert harness.main(["--ci"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"bench: {len(harness.CI)} figures, {len(harness.CI)} met, 0 missed"
    assert fake_figures["quick"] is True  # prepare_confirm on one kind per path


def test_the_ci_kinds_take_each_path_once():
    from bench.counted import CI_KINDS, small_kinds

    assert set(CI_KINDS) <= set(small_kinds())
    assert [kind.split()[0] for kind in CI_KINDS] == ["photo", "screenshot", "svg"]
