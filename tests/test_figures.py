"""The reliability figures reach var/reliability.json and `make test` prints them."""
from __future__ import annotations

from pathlib import Path

from tests.support import figures


def test_figures_are_written_beside_the_project_and_printed(tmp_path, capsys):
    assert figures.FIGURES_FILE == Path(__file__).resolve().parents[1] / "var" / "reliability.json"
    target = tmp_path / "reliability.json"
    figures.FIGURES["probe_figure"] = 3
    try:
        figures.write(target)
    finally:
        del figures.FIGURES["probe_figure"]
    figures.main(target)
    assert "probe_figure: 3" in capsys.readouterr().out
