"""Small server-rendered SVG charts for the staff dashboard: no script, no CDN, no library.

Every label is escaped; every chart is an ``<svg role="img">`` with a title, and each bar or
point carries a ``<title>`` with its exact value, which is what a browser shows on hover.
"""
from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#417690", "#ba2121", "#e3a21a", "#70bf2b", "#8a5ac2", "#5b7c99", "#c45a8c", "#3a9d9d")
WIDTH, HEIGHT, PAD, AXIS = 720, 220, 28, 40


def _frame(title: str, body: str, height: int = HEIGHT) -> SafeString:
    return mark_safe(  # noqa: S308 - every text inside went through escape()
        f'<svg class="arkme-chart" role="img" viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{body}</svg>')


def _axis(top: float, label: str) -> str:
    base = HEIGHT - PAD
    return (f'<line x1="{AXIS}" y1="{base}" x2="{WIDTH - 8}" y2="{base}" stroke="#999"/>'
            f'<text x="4" y="{PAD + 4}" font-size="11" fill="#666">{escape(f"{top:g}")}</text>'
            f'<text x="4" y="{base}" font-size="11" fill="#666">0</text>'
            f'<text x="{WIDTH - 8}" y="{HEIGHT - 6}" font-size="11" fill="#666" text-anchor="end">{escape(label)}</text>')


def stacked_bars(title: str, columns: Sequence[tuple[str, dict[str, int]]], keys: Sequence[str],
                 caption: str = "") -> SafeString:
    """One stacked bar per column (e.g. an hour), one colour per key (e.g. an outcome)."""
    top = max([sum(values.values()) for _, values in columns] + [1])
    span = (WIDTH - AXIS - 8) / max(1, len(columns))
    scale = (HEIGHT - 2 * PAD) / top
    parts = [_axis(top, caption)]
    for index, (label, values) in enumerate(columns):
        y: float = HEIGHT - PAD
        for colour, key in zip(PALETTE * 4, keys, strict=False):
            value = values.get(key, 0)
            if not value:
                continue
            height = value * scale
            y -= height
            parts.append(f'<rect class="bar" x="{AXIS + index * span + 1:.1f}" y="{y:.1f}" width="{max(1.0, span - 2):.1f}" '
                         f'height="{height:.1f}" fill="{colour}"><title>{escape(f"{label} {key}: {value}")}</title></rect>')
    legend = "".join(
        f'<rect x="{AXIS + 120 * i}" y="4" width="10" height="10" fill="{colour}"/>'
        f'<text x="{AXIS + 14 + 120 * i}" y="13" font-size="11">{escape(key)}</text>'
        for i, (colour, key) in enumerate(zip(PALETTE * 4, keys, strict=False)))
    return _frame(title, legend + "".join(parts))


def lines(title: str, columns: Sequence[tuple[str, dict[str, float | None]]], keys: Sequence[str],
          caption: str = "") -> SafeString:
    """One line per key over the columns; a missing value breaks the line."""
    values = [v for _, row in columns for v in row.values() if v is not None]
    top = max(values + [1])
    span = (WIDTH - AXIS - 8) / max(1, len(columns) - 1)
    scale = (HEIGHT - 2 * PAD) / top
    parts = [_axis(top, caption)]
    for colour, key in zip(PALETTE, keys, strict=False):
        points = [(AXIS + i * span, HEIGHT - PAD - value * scale, label, value)
                  for i, (label, row) in enumerate(columns) if (value := row.get(key)) is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
            parts.append(f'<polyline class="line" points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.extend(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                     f'<title>{escape(f"{label} {key}: {value:g}")}</title></circle>' for x, y, label, value in points)
    legend = "".join(f'<rect x="{AXIS + 120 * i}" y="4" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{AXIS + 14 + 120 * i}" y="13" font-size="11">{escape(key)}</text>'
                     for i, (colour, key) in enumerate(zip(PALETTE, keys, strict=False)))
    return _frame(title, legend + "".join(parts))


def horizontal_bars(title: str, rows: Sequence[tuple[str, int]]) -> SafeString:
    """One labelled bar per row (a funnel, a breakdown)."""
    top = max([value for _, value in rows] + [1])
    row_height = 26
    height = max(60, row_height * len(rows) + 16)
    label_width = 270
    scale = (WIDTH - label_width - 60) / top
    parts = []
    for index, ((label, value), colour) in enumerate(zip(rows, PALETTE * 4, strict=False)):
        y = 8 + index * row_height
        parts.append(f'<text x="{label_width - 8}" y="{y + 15}" font-size="12" text-anchor="end">{escape(label)}</text>'
                     f'<rect class="bar" x="{label_width}" y="{y}" width="{max(1.0, value * scale):.1f}" height="18" '
                     f'fill="{colour}"><title>{escape(f"{label}: {value}")}</title></rect>'
                     f'<text x="{label_width + value * scale + 6:.1f}" y="{y + 14}" font-size="12">{value}</text>')
    return _frame(title, "".join(parts), height=height)
