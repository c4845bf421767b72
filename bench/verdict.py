"""The run's verdict: how many figures met their goals, which missed, which were skipped.

``python -m bench`` prints it as its last line and exits non-zero when any figure missed.
A skipped figure (no PostgreSQL, no ``wrk``, no valgrind) is not a miss, but the line says so.
"""
from __future__ import annotations

from typing import Any


def verdict(results: list[dict[str, Any]]) -> tuple[int, str]:
    """(exit code, one line) for the figures' results (``Result.as_dict()``)."""
    skipped = [r["name"] for r in results if r.get("skipped")]
    missed = [r["name"] for r in results if not r.get("skipped") and r.get("met") is not True]
    met = len(results) - len(skipped) - len(missed)
    line = f"bench: {len(results)} figures, {met} met, {len(missed)} missed"
    if missed:
        line += f" ({', '.join(missed)})"
    if skipped:
        line += f", {len(skipped)} skipped ({', '.join(skipped)})"
    return (1 if missed else 0), line
