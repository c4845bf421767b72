"""What a call does with an SVG, for three SVGs (simple, 300 paths, gradients): the
restricted-SVG check, the render in a bounded render process (through the task when a broker
is configured; in-process here, as the embedded default runs), decoding the rendered PNG, the
stream check and the fingerprint; against the same work with bare ``cairosvg.svg2png``
in-process (``bench.gallery_floors.derive``)."""
from __future__ import annotations

import math

from .common import Result, paired_medians


def svgs() -> dict[str, bytes]:
    head = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 800 800">'
    simple = head + '<circle cx="400" cy="400" r="300" fill="#e33"/></svg>'
    paths = head + "".join(
        f'<path d="M{400 + 300 * math.cos(i / 30):.1f} {400 + 300 * math.sin(i / 30):.1f} '
        f'L{400 + 150 * math.cos(i / 7):.1f} {400 + 150 * math.sin(i / 7):.1f} Q400 400 {i % 800} {800 - i % 800} Z" '
        f'fill="none" stroke="#{i * 7919 % 0xFFFFFF:06x}" stroke-width="2"/>' for i in range(300)) + "</svg>"
    gradients = head + "<defs>" + "".join(
        f'<linearGradient id="g{i}" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#{i * 40:02x}2060"/>'
        f'<stop offset="1" stop-color="#20{i * 40:02x}a0"/></linearGradient>' for i in range(6)) + "</defs>" + "".join(
        f'<rect x="{i * 120}" y="{i * 100}" width="300" height="300" rx="40" fill="url(#g{i})" opacity="0.8"/>'
        for i in range(6)) + "</svg>"
    return {"simple": simple.encode(), "300 paths": paths.encode(), "gradients": gradients.encode()}


def run() -> Result:
    import hashlib

    from galleries.ingest.process_image import process_image

    from .gallery_floors import derive

    sources = svgs()

    def product():
        for data in sources.values():
            process_image(data)

    def floor():
        for data in sources.values():
            hashlib.sha256(derive(data)).hexdigest()

    ours, least = paired_medians(product, floor, rounds=15)
    ratio = ours / least
    return Result("svg_normalise", round(ratio, 3), "× floor", "the SVG check, bare cairosvg.svg2png, decode, "
                  "the PNG stream check and sha256, in-process", "≤ 1.1×", ratio <= 1.1,
                  {"product_ms": round(ours * 1000, 2), "baseline_ms": round(least * 1000, 2)})
