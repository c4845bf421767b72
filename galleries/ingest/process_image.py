"""From source bytes to the bytes a gallery stores: sniff, validate, normalise, fingerprint."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .png_stream import png_image_chunks
from .raster import process_raster, sniff
from .svg_render import render_png_via_task
from .svg_sanitise import sanitise_svg


@dataclass(frozen=True)
class ProcessedImage:
    data: bytes
    sha256: str
    width: int
    height: int
    format: str


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def process_image(data: bytes, field: str | None = None) -> ProcessedImage:
    fmt = sniff(data, field)
    if fmt == "svg":
        safe = sanitise_svg(data, field)
        png = render_png_via_task(safe.data, safe.width, safe.height)
        clean, width, height = process_raster(png, "png", field)
        fmt = "png"
    else:
        clean, width, height = process_raster(data, fmt, field)
    return ProcessedImage(data=clean, sha256=sha256_hex(clean), width=width, height=height, format=fmt)


def reproduce_image(data: bytes, field: str | None, *, content_sha256: str, width: int, height: int) -> ProcessedImage:
    """The image prepare made from these bytes, which the caller has found unchanged (same
    source fingerprint), so they were validated then. A PNG prepare kept as its image chunks
    is kept again without decoding it; anything else is processed again in full."""
    kept = png_image_chunks(data)
    if kept is not None:
        sha256 = sha256_hex(kept)
        if sha256 == content_sha256:
            return ProcessedImage(data=kept, sha256=sha256, width=width, height=height, format="png")
    return process_image(data, field)
