"""Small renditions of stored images for staff pages: made once, then read from storage."""
from __future__ import annotations

import io

from PIL import Image

THUMBNAIL_SIDE = 128


def make_thumbnail(data: bytes, side: int = THUMBNAIL_SIDE) -> bytes:
    """A PNG at most ``side`` pixels on its longer side. The input is a stored blob, already
    validated and bounded when it was added."""
    with Image.open(io.BytesIO(data)) as image:
        image.draft("RGB", (side, side))  # JPEG decodes straight at a reduced scale
        image.thumbnail((side, side))
        out = io.BytesIO()
        image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB").save(out, "PNG")
    return out.getvalue()
