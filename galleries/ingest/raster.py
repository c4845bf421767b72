"""Image validation and normalisation.

The format comes from the bytes, never a name. A raster is fully decoded under a pixel
limit, turned upright by its EXIF orientation, measured, converted to sRGB, and encoded
again without any metadata (EXIF, XMP, text chunks, ICC profile, comments): a user's GPS
position must not reach a public gallery.

A PNG that is already upright and has no colour profile needs no new pixels: it is stored
as its image chunks alone (header, palette, transparency, image data), every other chunk
left out. Encoding a PNG costs eight times its decoding, and the stored bytes are then
exactly the pixels the user gave.
"""
from __future__ import annotations

import io
import warnings
import zlib

from PIL import ExifTags, Image, ImageCms, ImageOps, UnidentifiedImageError

from arkme.kernel.errors import ContentRejected, ErrorCode
from arkme.kernel.text import size_text

MAX_SOURCE_BYTES = 5 * 1024 * 1024
MAX_STORED_BYTES = 5 * 1024 * 1024
MIN_SIDE = 320
MAX_SIDE = 4096
MAX_PIXELS = MAX_SIDE * MAX_SIDE

PILLOW_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP", "gif": "GIF"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The chunks that are the image itself; a kept PNG has these and nothing else.
_PNG_IMAGE_CHUNKS = frozenset({b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND"})
# Animation chunks: such a PNG is decoded and encoded again instead. (A colour profile or
# an orientation is found by decoding, in process_raster, which then converts.)
_PNG_CONVERT_CHUNKS = frozenset({b"acTL", b"fcTL", b"fdAT"})
_SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))


class ImageRejected(ContentRejected):
    """422 with a stable code, naming the argument the image came from."""

    def __init__(self, code: ErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message, code=code, details={"fields": [field]} if field else None)


def sniff(data: bytes, field: str | None = None) -> str:
    """png, jpeg, webp, gif or svg, from the leading bytes; anything else is refused."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith(b"\x1f\x8b"):
        raise ImageRejected(ErrorCode.UNSUPPORTED_FORMAT, "Compressed SVG is not accepted.", field)
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"<?xml", b"<svg", b"<!--")):
        return "svg"
    raise ImageRejected(
        ErrorCode.UNSUPPORTED_FORMAT, "Only PNG, JPEG, WebP, static GIF and restricted SVG images are accepted.", field
    )


def png_image_chunks(data: bytes) -> bytes | None:
    """The PNG with only its image chunks, each with a valid checksum; or None when it must
    be decoded and encoded again (animation, an unknown critical chunk, a bad checksum, a
    missing header or end). Bytes after the end are dropped."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    view = memoryview(data)
    kept: list[bytes | memoryview] = [PNG_SIGNATURE]
    position, first = len(PNG_SIGNATURE), True
    while position + 12 <= len(data):
        length = int.from_bytes(view[position:position + 4], "big")
        kind = bytes(view[position + 4:position + 8])
        end = position + 12 + length
        if end > len(data) or (first and kind != b"IHDR") or kind in _PNG_CONVERT_CHUNKS:
            return None
        if kind in _PNG_IMAGE_CHUNKS:
            if zlib.crc32(view[position + 4:end - 4]) != int.from_bytes(view[end - 4:end], "big"):
                return None
            kept.append(view[position:end])
            if kind == b"IEND":
                return b"".join(kept)
        elif not kind[0] & 0x20:  # an upper-case first letter: a critical chunk this code does not know
            return None
        position, first = end, False
    return None


def _to_srgb(image: Image.Image, field: str | None) -> Image.Image:
    # Without a profile the pixels are taken as sRGB; a CMYK JPEG is converted by the encoder.
    icc = image.info.get("icc_profile")
    if icc:
        try:
            source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
            mode = "RGBA" if image.mode in ("RGBA", "LA", "PA") else "RGB"
            if image.mode not in ("RGB", "RGBA", "CMYK", "L"):
                image = image.convert("RGBA" if mode == "RGBA" else "RGB")
            converted = ImageCms.profileToProfile(image, source, _SRGB, outputMode=mode)
            image = converted if converted is not None else image
        except (ImageCms.PyCMSError, OSError, ValueError) as exc:
            raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image's colour profile cannot be read.", field) from exc
    return image


def _encode(image: Image.Image, fmt: str) -> bytes:
    image.info = {}  # nothing of the source's metadata may be written back
    out = io.BytesIO()
    if fmt == "jpeg":
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        image.save(out, "JPEG", quality=90, optimize=False)
    elif fmt == "webp":
        image.save(out, "WEBP", quality=90, method=4)
    elif fmt == "gif":
        if image.mode not in ("P", "L"):
            image = image.convert("P", palette=Image.Palette.ADAPTIVE)
        image.save(out, "GIF")
    else:
        image.save(out, "PNG", compress_level=6)
    return out.getvalue()


def process_raster(data: bytes, fmt: str, field: str | None = None) -> tuple[bytes, int, int]:
    """Validate and normalise a raster image. Returns (clean bytes, width, height)."""
    if len(data) > MAX_SOURCE_BYTES:
        raise ImageRejected(ErrorCode.IMAGE_TOO_LARGE, f"An image may have at most {size_text(MAX_SOURCE_BYTES)}.", field)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(io.BytesIO(data), formats=[PILLOW_FORMATS[fmt]])
            width, height = image.size
            # Refuse before decoding: the header alone says how much memory the pixels take.
            if width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
                raise ImageRejected(ErrorCode.IMAGE_DIMENSIONS, f"Each side must be {MIN_SIDE} to {MAX_SIDE} pixels.", field)
            if getattr(image, "n_frames", 1) > 1 or getattr(image, "is_animated", False):
                raise ImageRejected(ErrorCode.ANIMATED_IMAGE, "Animated images are not accepted.", field)
            image.load()
            # exif_transpose also reads an orientation given in XMP.
            upright = image.getexif().get(ExifTags.Base.Orientation, 1) not in range(2, 9)
            if not upright:
                image = ImageOps.exif_transpose(image)
    except ImageRejected:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError,
            Image.DecompressionBombWarning, EOFError) as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    width, height = image.size
    if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
        raise ImageRejected(ErrorCode.IMAGE_DIMENSIONS, f"Each side must be {MIN_SIDE} to {MAX_SIDE} pixels.", field)
    kept = png_image_chunks(data) if fmt == "png" and upright and not image.info.get("icc_profile") else None
    clean = kept if kept is not None else _encode(_to_srgb(image, field), fmt)
    if len(clean) > MAX_STORED_BYTES:
        raise ImageRejected(ErrorCode.IMAGE_TOO_LARGE, f"The image would take more than {size_text(MAX_STORED_BYTES)} to store.", field)
    return clean, width, height
