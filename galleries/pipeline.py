"""From source bytes to the bytes a gallery stores: sniff, validate, normalise, fingerprint."""
from __future__ import annotations

import base64

from arkme.tasking import run_and_wait

from .blobstore import sha256_hex
from .imaging import ProcessedImage, png_image_chunks, process_raster, sniff
from .svg import sanitise_svg


def process_image(data: bytes, field: str | None = None) -> ProcessedImage:
    fmt = sniff(data, field)
    if fmt == "svg":
        safe = sanitise_svg(data, field)
        from .tasks import render_svg  # the task module imports this one

        png = base64.b64decode(run_and_wait(render_svg, safe.data.decode("utf-8"), safe.width, safe.height))
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
