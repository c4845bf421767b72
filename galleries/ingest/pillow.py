"""Pillow's part of normalising a raster.

Pillow opens every image and reads every header (format, size, frames, orientation,
profile). It decodes, turns, converts and encodes what libvips does not take (GIFs, 16-bit
grey PNGs, a PNG whose chunks must be encoded again); it decodes a palette PNG's indices for
the palette writer, and the images it holds exactly as decoded, to lend to libvips.
"""
from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from .colour import check_palette, palette_to_srgb, to_srgb
from .limits import check_stored_size
from .normalised import EncodedOutput, Normalised, encoded_whole
from .png_palette import write_palette_png
from .png_stream import png_metadata_only
from .rejection import undecodable
from .vips import decode_in_one_block

PILLOW_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP", "gif": "GIF"}
# What Pillow raises for bytes it cannot decode (a bomb's warning is raised as an error).
UNDECODABLE = (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError,
               Image.DecompressionBombWarning, EOFError)
_TRANSPOSE = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
              5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
              8: Image.Transpose.ROTATE_90}  # ImageOps.exif_transpose's


@contextlib.contextmanager
def decoding(field: str | None) -> Iterator[None]:
    """Pillow's errors for bytes it cannot decode, a decompression bomb's warning among them,
    raised as the image's refusal."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            yield
    except UNDECODABLE as exc:
        raise undecodable(field) from exc


def opened(data: bytes, fmt: str) -> Image.Image:
    """The image's header read by the decoder for the format its bytes were sniffed as."""
    return Image.open(io.BytesIO(data), formats=[PILLOW_FORMATS[fmt]])


def is_animated(image: Image.Image) -> bool:
    return getattr(image, "n_frames", 1) > 1 or getattr(image, "is_animated", False)


def orientation(image: Image.Image, data: bytes, fmt: str) -> int | None:
    """The EXIF (or XMP) orientation Pillow reads, 1 for upright; None when it cannot be known
    without decoding. Pillow reads a PNG's orientation only once the image is decoded, as it
    may follow the image data; it is read here from the PNG's other chunks alone."""
    if fmt != "png":
        value = image.getexif().get(ExifTags.Base.Orientation, 1)
    else:
        # 16-bit grey: Pillow's mode does not say; 16-bit colour libvips takes to 8 bits as Pillow.
        if len(data) < 26 or data[12:16] != b"IHDR" or (data[24] != 8 and data[25] not in (2, 3, 6)):
            return None
        metadata = png_metadata_only(data)
        if metadata is None:
            return None
        try:
            with Image.open(io.BytesIO(metadata), formats=["PNG"]) as chunks:
                # The base class's reading, which the PNG plugin wraps in a decode.
                value = Image.Image.getexif(chunks).get(ExifTags.Base.Orientation, 1)
        except (OSError, SyntaxError, ValueError, EOFError):
            return None
    return value if value in range(2, 9) else 1


def decoded_upright(image: Image.Image) -> tuple[Image.Image, bool]:
    """The image decoded and turned by its orientation; and whether it was upright already."""
    image.load()
    # exif_transpose also reads an orientation given in XMP.
    upright = image.getexif().get(ExifTags.Base.Orientation, 1) not in range(2, 9)
    if not upright:
        image = ImageOps.exif_transpose(image)
    return image, upright


def decoded_to_lend(image: Image.Image, field: str | None) -> Image.Image:
    """The image decoded by Pillow in one block, to lend libvips."""
    with decoding(field):
        decode_in_one_block(image)
    return image


def decoded_png(data: bytes, field: str | None) -> Image.Image:
    with decoding(field):
        image = Image.open(io.BytesIO(data), formats=["PNG"])
        image.load()
    return image


def encode(image: Image.Image, fmt: str) -> bytes:
    # Nothing of the source's metadata may be written back; which palette entry or grey
    # level is transparent is part of the pixels, not metadata, and is kept.
    transparency = image.info.get("transparency") if image.mode in ("P", "L") else None
    image.info = {}
    extra = {} if transparency is None else {"transparency": transparency}
    out = io.BytesIO()
    if fmt == "jpeg":
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        image.save(out, "JPEG", quality=90, optimize=False)
    elif fmt == "webp":
        image.save(out, "WEBP", quality=90, method=4)
    elif fmt == "gif":
        if image.mode not in ("P", "L"):
            image, extra = image.convert("P", palette=Image.Palette.ADAPTIVE), {}
        image.save(out, "GIF", **extra)
    else:
        image.save(out, "PNG", compress_level=6, **extra)
    return out.getvalue()


def normalise_decoded(image: Image.Image, fmt: str, field: str | None, keep: bool) -> Normalised:
    """An image Pillow decoded and turned, converted to sRGB and encoded without metadata."""
    width, height = image.size
    if fmt == "png":
        check_palette(image, field)
    return encoded_whole(encode(to_srgb(image, field), fmt), width, height, field, keep)


def normalise_palette(image: Image.Image, data: bytes, orientation: int, icc: bytes | None,
                      field: str | None, keep: bool) -> Normalised:
    """A palette PNG that must be turned or colour-converted: decoded by Pillow (one byte a
    pixel), every index checked against the palette, the palette converted from ``icc`` on
    its own, and written out turned a strip at a time (``png_palette.write_palette_png``),
    into its fingerprint and into memory only when ``keep``: no second full-size image."""
    with decoding(field):
        image.load()
    check_palette(image, field)
    palette = bytes(image.getpalette("RGB") or b"")
    if icc:
        palette = palette_to_srgb(palette, icc, field)
    entries = len(palette) // 3
    transparency = image.info.get("transparency")
    if isinstance(transparency, int):  # Pillow's form for one transparent entry
        transparency = b"\xff" * transparency + b"\x00"
    # The source's bit depth, unless its palette is longer than that depth allows (which a
    # strict decoder refuses); opacities for the palette's entries at most.
    depth = data[24] if entries <= 1 << data[24] else 8
    output = EncodedOutput(keep)
    write_palette_png(image, _TRANSPOSE.get(orientation), depth, palette, transparency and transparency[:entries],
                      output.write)
    check_stored_size(output.size, field)
    width, height = image.size if orientation < 5 else image.size[::-1]
    image.close()  # the decoded image goes before the output is joined
    return output.normalised(width, height)
