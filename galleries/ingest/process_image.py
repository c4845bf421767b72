"""From source bytes to the bytes a gallery stores: sniff, validate, normalise, fingerprint."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from arkme.kernel.offload import offload

from .normalised import Normalised
from .png_stream import png_image_chunks
from .raster import normalise_raster, sniff
from .svg_render import render_png_via_task
from .svg_sanitise import sanitise_svg


@dataclass(frozen=True)
class ImageFacts:
    """What prepare records of an image it will store: the stored bytes' fingerprint, not the bytes."""

    sha256: str
    width: int
    height: int
    format: str


@dataclass(frozen=True)
class ProcessedImage(ImageFacts):
    data: bytes


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _normalise(data: bytes, fmt: str, field: str | None, keep: bool, account: int | None) -> tuple[Normalised, str]:
    # Parsing, decoding and encoding hold a thread for up to a second: not the one serving
    # requests. The render waits on its own process (or task) instead.
    if fmt == "svg":
        safe = offload(sanitise_svg, data, field)
        png = render_png_via_task(safe.data, safe.width, safe.height, account=account)
        return offload(normalise_raster, png, "png", field, keep=keep), "png"
    return offload(normalise_raster, data, fmt, field, keep=keep), fmt


def process_image(data: bytes, field: str | None = None, *, account: int | None = None) -> ProcessedImage:
    """``account``: whose image this is; an SVG's render counts against its renders in flight."""
    normalised, fmt = _normalise(data, sniff(data, field), field, keep=True, account=account)
    return ProcessedImage(data=normalised.kept_bytes(), sha256=normalised.sha256, width=normalised.width,
                          height=normalised.height, format=fmt)


def image_facts(data: bytes, field: str | None = None, *, account: int | None = None) -> ImageFacts:
    """The same validation and normalisation as ``process_image``, keeping only the fingerprint:
    an encoder's output goes into the hash as it is written and is never held whole. An SVG
    is the exception: its render, the costly part of an add, comes back whole (a
    ``ProcessedImage``) so that the caller can keep it for confirm instead of rendering twice."""
    fmt = sniff(data, field)
    if fmt == "svg":
        return process_image(data, field, account=account)
    normalised, fmt = _normalise(data, fmt, field, keep=False, account=account)
    return ImageFacts(sha256=normalised.sha256, width=normalised.width, height=normalised.height, format=fmt)


def reproduce_image(data: bytes, field: str | None, *, content_sha256: str, width: int, height: int,
                    account: int | None = None) -> ProcessedImage:
    """The image prepare made from these bytes, which the caller has found unchanged (same
    source fingerprint), so they were validated then. A PNG prepare kept as its image chunks
    is kept again without decoding it; anything else is processed again in full."""
    kept = png_image_chunks(data)
    if kept is not None:
        sha256 = sha256_hex(kept)
        if sha256 == content_sha256:
            return ProcessedImage(data=kept, sha256=sha256, width=width, height=height, format="png")
    return process_image(data, field, account=account)
