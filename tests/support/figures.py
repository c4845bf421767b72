"""Figures of the reliability suite, gathered over a run and written to var/ at its end."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

FIGURES: dict[str, float] = defaultdict(float)


def add(name: str, amount: float = 1) -> None:
    FIGURES[name] += amount


def write(path: Path) -> dict:
    if FIGURES.get("cross_account_cases"):
        FIGURES["cross_account_refused_percent"] = round(
            100 * FIGURES["cross_account_refused"] / FIGURES["cross_account_cases"], 1)
    data = {key: FIGURES[key] for key in sorted(FIGURES)}
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(path.read_text()) if path.exists() else {}
    existing.update(data)
    path.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")
    return existing


FIGURES_FILE = Path(__file__).resolve().parents[2] / "var" / "reliability.json"


def main(path: Path = FIGURES_FILE) -> None:
    if not path.exists():
        return
    print("reliability figures (var/reliability.json):")
    for key, value in sorted(json.loads(path.read_text()).items()):
        print(f"  {key}: {value:g}" if isinstance(value, (int, float)) else f"  {key}: {value}")


if __name__ == "__main__":
    main()
