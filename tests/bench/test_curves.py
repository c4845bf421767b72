"""The cost curves' worlds hold what their docstrings say (no timing is asserted here)."""
from __future__ import annotations

import hashlib

import pytest

from bench import confirm_growth, curves, extensions_growth


def test_the_marginal_ratio_reads_linear_work_as_one_and_quadratic_as_several():
    linear = {n: 5.0 + 2.0 * n for n in (1, 25, 50)}
    quadratic = {n: 5.0 + 2.0 * n * n for n in (1, 25, 50)}
    assert curves.marginal_ratio(linear, (1, 25), (25, 50)) == pytest.approx(1.0)
    assert curves.marginal_ratio(quadratic, (1, 25), (25, 50)) > curves.GOAL


def test_curve_seconds_runs_every_size_every_round_and_resets_after_each():
    ran: list[object] = []
    found = curves.curve_seconds({n: (lambda n=n: ran.append(n)) for n in (1, 2, 3)}, (1, 2, 3), rounds=3,
                                 warmup=1, reset=lambda: ran.append("reset"))
    assert set(found) == {1, 2, 3}
    assert ran == [1, "reset", 2, "reset", 3, "reset"] * 4


@pytest.mark.django_db
def test_the_extensions_world_lists_each_accounts_extensions_in_the_same_statements():
    key, sessions = extensions_growth.world((1, 4))
    context, view = extensions_growth.calls(key, sessions)
    for call in (*context.values(), *view.values()):
        call()  # each checks its answer: 200, and as many extensions as the size
    assert extensions_growth.statements(context[1]) == extensions_growth.statements(context[4])


def test_every_image_of_a_confirm_curve_is_a_different_file_and_each_drawing_has_its_mark():
    """An add of n images stores n only if their normalised images differ (the bench's add
    checks that it stored all n): the template's drawings render the same whatever the seed,
    so each carries a mark of its own seed."""
    for _suffix, make in confirm_growth.kinds().values():
        assert len({hashlib.sha256(make(seed)).hexdigest() for seed in range(20)}) == 20
    svg = confirm_growth.kinds()["svg 300 paths (svg)"][1]
    assert svg(3) == svg(3) and b'<rect x="3"' in svg(3) and b'<rect x="4"' in svg(4)


@pytest.mark.django_db(transaction=True)
def test_the_confirm_curve_adds_every_image_and_counts_its_statements(settings, tmp_path, monkeypatch):
    settings.ARKME_WORKSPACE_ROOT = str(tmp_path / "workspaces")
    monkeypatch.setattr(confirm_growth, "SIZES", (1, 2, 3))
    monkeypatch.setattr(confirm_growth, "BOTTOM", (1, 2))
    monkeypatch.setattr(confirm_growth, "TOP", (2, 3))
    kind = "screenshot png 480×360 (kept)"
    result = confirm_growth.run(rounds=1, only=[kind])  # an add that stored fewer images raises
    assert result.detail["statements an image adds"] <= 1
    assert "confirm statements {1:" in result.detail[kind]
