"""User-facing wording of sizes and durations, derived from the settings they describe."""
from __future__ import annotations

MiB = 1024 * 1024


def size_text(size: int) -> str:
    """``5 MiB``, ``512 KiB`` or ``300 bytes``: the largest unit that divides evenly."""
    for unit, factor in (("GiB", 1024 * MiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


def duration_text(seconds: int) -> str:
    """``7 days``, ``1 hour``, ``90 seconds``: the largest unit that divides evenly."""
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= length and seconds % length == 0:
            count = seconds // length
            return f"{count} {unit}" + ("" if count == 1 else "s")
    return f"{seconds} second" + ("" if seconds == 1 else "s")
