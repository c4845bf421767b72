"""Image validation and normalisation.

The format comes from the bytes, never a name. A raster is fully decoded under a pixel
limit, turned upright by its EXIF orientation, measured, converted to sRGB, and encoded
again without any metadata (EXIF, XMP, text chunks, ICC profile, comments): a user's GPS
position must not reach a public gallery.

A PNG that is already upright and has no colour profile needs no new pixels: once
``png_stream`` has proven that its chunks hold exactly its pixels, it is stored as those
chunks alone. Encoding a PNG costs eight times its decoding.

Decoding is bounded before it starts: the header's dimensions against the pixel limit (so
memory), and a JPEG's number of scans (so time: libjpeg walks every block of the image for
each scan of a progressive JPEG, and a few kilobytes can hold thousands of empty scans). PNG,
WebP and GIF decode in time linear in their pixels, which the pixel limit bounds.

Pillow reads every header and makes every decision (format, bounds, orientation, profile).
RGB, grey and CMYK JPEGs, RGB(A) WebPs, and RGB(A) and grey PNGs that must be turned or
colour-converted are then decoded, turned, converted and encoded by libvips, which runs that
pipeline in tiles over every core and turns an image while encoding it instead of making a
turned copy (docs/PERFORMANCE.md). One that must be held whole for its turn is decoded by
Pillow instead where Pillow's memory is exactly the decoded image and Pillow decodes it as
fast (a grey JPEG; a 16-bit RGBA PNG, which libvips would cache at 16 bits), and lent to
libvips without a copy (``vips.lent_pixels``): libvips' sequential decoders keep a line cache
of some 640 rows beside the image. Colour is converted before the image is held, so a CMYK one
is held in three bytes a pixel. A palette PNG stays one byte a pixel: Pillow decodes its
indices, its palette is converted on its own, and it is written out turned a strip at a time
(``png_palette.write_palette_png``). GIFs go through Pillow.
libvips' encoder writes its output a chunk at a time into the fingerprint, and into memory
only when the caller keeps the bytes (a prepare keeps only the fingerprint); it is stopped at
the stored limit instead of finishing an output that would be refused.
"""
from __future__ import annotations

import functools
import hashlib
import io
import re
import warnings
from dataclasses import dataclass
from typing import Any

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from arkme.kernel.errors import ErrorCode
from arkme.kernel.text import size_text

from .colour import check_palette, converts_to_itself, palette_to_srgb
from .colour import check_profile as _check_profile
from .colour import to_srgb as _to_srgb
from .png_palette import write_palette_png
from .png_stream import PNG_SIGNATURE, joined_parts, png_image_parts, png_metadata_only
from .rejection import ImageRejected as ImageRejected  # its home before rejection.py
from .rejection import unreadable_profile
from .vips import can_lend, decode_in_one_block, lent_pixels
from .vips import libvips as _pyvips

MAX_SOURCE_BYTES = 5 * 1024 * 1024
MAX_STORED_BYTES = 5 * 1024 * 1024
MIN_SIDE = 320
MAX_SIDE = 4096
MAX_PIXELS = MAX_SIDE * MAX_SIDE
# A progressive JPEG has about ten scans; encoders that optimise scans stay well under 64.
MAX_JPEG_SCANS = 64
# Markers without a length: TEM, RST0-7, SOI, EOI.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8), 0xD8, 0xD9})
# In entropy-coded data, 0xFF followed by anything but stuffing (0x00) or a restart (RST0-7).
_NEXT_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7]")

PILLOW_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP", "gif": "GIF"}
# Pillow modes libvips takes for each format: 8-bit colour, grey or CMYK, with alpha where the
# format has it. A PNG's palette is turned and converted by its own writer (png_palette), and
# 16-bit grey PNGs and GIFs by Pillow.
_VIPS_MODES = {"jpeg": frozenset({"RGB", "L", "CMYK"}), "webp": frozenset({"RGB", "RGBA"}),
               "png": frozenset({"RGB", "RGBA", "L", "LA", "P"})}


@dataclass(frozen=True)
class Normalised:
    """A normalised image: the fingerprint and dimensions of the bytes to store, and those bytes
    when the caller keeps them (``None`` when it asked only for the fingerprint)."""

    data: bytes | None
    sha256: str
    width: int
    height: int

    def kept_bytes(self) -> bytes:
        if self.data is None:
            raise ValueError("only the fingerprint was asked for; the bytes were not kept")
        return self.data


class _EncodedOutput:
    """Where libvips' encoder writes, a chunk at a time: each chunk goes into the fingerprint
    and the size as it comes, and is kept only when the caller needs the bytes. Encoding into a
    memory buffer instead held the output up to three times over (the growing buffer, its copy
    and Python's) at the moment the decoded image was largest in memory."""

    def __init__(self, keep: bool) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        # Chunks, not a growing buffer: growing one copies what it holds each time it moves.
        self.kept: list[bytes] | None = [] if keep else None

    def write(self, chunk: Any) -> int:
        self.size += len(chunk)
        if self.size > MAX_STORED_BYTES:
            return -1  # libvips stops encoding; the caller reports the size
        self.digest.update(chunk)
        if self.kept is not None:
            self.kept.append(bytes(chunk))  # libvips reuses its buffer after the call
        return len(chunk)

    def joined(self) -> bytes | None:
        """The output in one piece, the chunks let go."""
        if self.kept is None:
            return None
        data, self.kept = b"".join(self.kept), None
        return data


def sniff(data: bytes, field: str | None = None) -> str:
    """png, jpeg, webp, gif or svg, from the leading bytes; anything else is refused."""
    if data.startswith(PNG_SIGNATURE):
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


def jpeg_scans(data: bytes) -> int | None:
    """How many scans (SOS markers) a JPEG holds, walking its markers and skipping entropy-coded
    data (where 0xFF is always followed by 0x00 or a restart marker); None when malformed."""
    view, position, scans, size = memoryview(data), 2, 0, len(data)
    while position + 1 < size:
        if view[position] != 0xFF:
            return None
        marker = view[position + 1]
        if marker == 0xFF:  # fill bytes before a marker
            position += 1
            continue
        if marker == 0xD9:
            return scans
        if marker in _STANDALONE:
            position += 2
            continue
        if position + 4 > size:
            return None
        position += 2 + int.from_bytes(view[position + 2:position + 4], "big")
        if marker != 0xDA:
            continue
        scans += 1
        if scans > MAX_JPEG_SCANS:
            return scans
        # Entropy-coded data runs to the next marker that is not stuffing or a restart, found
        # in one search in C: a photograph's data holds a stuffed 0xFF every few hundred bytes,
        # and stepping over each in Python cost 10 ms of a 12 Mpx JPEG.
        found = _NEXT_MARKER.search(data, position)
        if found is None:
            return None
        position = found.start()
    return None


def _check_decode_cost(data: bytes, fmt: str, field: str | None) -> None:
    if fmt == "jpeg":
        scans = jpeg_scans(data)
        if scans is not None and scans > MAX_JPEG_SCANS:
            raise ImageRejected(ErrorCode.IMAGE_TOO_COMPLEX,
                                f"A JPEG may have at most {MAX_JPEG_SCANS} scans.", field)


def _encode(image: Image.Image, fmt: str) -> bytes:
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


def _orientation(image: Image.Image, data: bytes, fmt: str) -> int | None:
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


def _vips_upright(image: Any, orientation: int) -> Any:
    """The EXIF orientation applied as Pillow's ``exif_transpose`` applies it."""
    if orientation in (5, 6):
        image = image.rot("d90")
    elif orientation in (7, 8):
        image = image.rot("d270")
    elif orientation == 3:
        image = image.rot("d180")
    elif orientation == 4:
        image = image.flip("vertical")
    if orientation in (2, 5, 7):
        image = image.flip("horizontal")
    return image


@functools.cache
def _divide_by_255() -> bytes:
    """A lookup table from 0–65025 to the nearest whole number of 255ths (no ties: 255 is odd)."""
    return bytes(min(255, (product + 127) // 255) for product in range(1 << 16))


def _cmyk_to_rgb(image: Any) -> Any:
    """CMYK without a profile to RGB exactly as Pillow converts it (and the Pillow path stored
    it): each of C, M, Y with K to (255 − c)(255 − k) / 255, rounded, in whole numbers (the
    product of two bytes, then a table)."""
    product = image[0:3].invert() * image[3].invert()  # 16 bits a sample
    table = _pyvips().Image.new_from_memory(_divide_by_255(), 1 << 16, 1, 1, "uchar")  # not a copy
    return product.maplut(table).copy(interpretation="srgb")


def _lend(image: Image.Image, data: bytes, fmt: str) -> bool:
    """Whether to decode with Pillow and lend libvips the pixels, for a turn: where Pillow holds
    exactly the decoded image and decodes it as fast as libvips, straight into its memory. A
    JPEG, and a 16-bit PNG, which Pillow reads straight to 8 bits where libvips caches 16-bit
    rows (0.33× of a 4096-row image). Not an 8-bit PNG: Pillow inflates it at a third of
    libvips' speed (a flat 4096² RGBA in 300 ms against 100), more time than libvips' line
    cache (0.16×) costs memory. Not a WebP: Pillow copies the decoder's whole output."""
    return can_lend(image) and (fmt == "jpeg" or (fmt == "png" and data[24] == 16))


def _decoded_to_lend(image: Image.Image, field: str | None) -> Image.Image:
    """The image decoded by Pillow in one block, to lend libvips."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            decode_in_one_block(image)
    except _UNDECODABLE as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    return image


_TRANSPOSE = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
              5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
              8: Image.Transpose.ROTATE_90}  # ImageOps.exif_transpose's


def _palette_normalise(image: Image.Image, data: bytes, orientation: int, icc: bytes | None,
                       field: str | None, keep: bool) -> Normalised:
    """A palette PNG that must be turned or colour-converted: decoded by Pillow (one byte a
    pixel), every index checked against the palette, the palette converted from ``icc`` on
    its own, and written out turned a strip at a time (``png_palette.write_palette_png``),
    into its fingerprint and into memory only when ``keep``: no second full-size image."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image.load()
    except _UNDECODABLE as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
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
    output = _EncodedOutput(keep)
    write_palette_png(image, _TRANSPOSE.get(orientation), depth, palette, transparency and transparency[:entries],
                      output.write)
    if output.size > MAX_STORED_BYTES:
        raise _too_large_to_store(field)
    width, height = image.size if orientation < 5 else image.size[::-1]
    image.close()  # the decoded image goes before the output is joined
    return Normalised(data=output.joined(), sha256=output.digest.hexdigest(), width=width, height=height)


def _vips_normalise(data: bytes, fmt: str, orientation: int, icc: bytes | None, field: str | None,
                    keep: bool, lent: list[Image.Image]) -> Normalised:
    """Decode, turn, convert to sRGB (from ``icc`` when given) and encode without metadata, in
    one libvips pipeline whose output streams into its fingerprint (and into memory only when
    ``keep``). ``lent``: the image decoded by Pillow (``_decoded_to_lend``), taken from the list
    so that nothing else holds it, whose pixels libvips reads where they lie."""
    pyvips = _pyvips()
    decoded = lent.pop() if lent else None
    try:
        if decoded is None:
            # The loader is the one for the format the bytes were sniffed as: libvips never
            # picks another for them. It reads them where they are: a loader given a buffer
            # copies it first, and that copy sat beside the decoded image. A truncated image is
            # refused, as Pillow refuses it, rather than filled in with grey.
            load = getattr(pyvips.Image, f"{fmt}load_source")  # jpegload_source, webpload_source, pngload_source
            image = load(pyvips.Source.new_from_memory(data), access="sequential", fail_on="truncated")
            if image.format == "ushort":  # a 16-bit colour PNG, to 8 bits as Pillow reads it
                image = image.colourspace("srgb")
        else:
            image = lent_pixels(decoded)
            if icc:  # what libvips' decoders attach, for the transform below
                image = image.copy()
                image.set_type(pyvips.GValue.blob_type, "icc-profile-data", icc)
    except pyvips.Error as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    # Colour first: it is the same per pixel before the turn as after, and a CMYK image held
    # for its turn is then held in three bytes a pixel, not four.
    if icc:
        try:
            image = image.icc_transform("srgb", embedded=True, intent="perceptual")
        except pyvips.Error as exc:
            raise unreadable_profile(field) from exc
    elif image.interpretation == "cmyk":
        image = _cmyk_to_rgb(image)
    if decoded is None and orientation != 1:
        # An upright image streams from decoder to encoder a strip at a time; a turn reads the
        # image out of order, so it is decoded whole first, in one sequential pass into memory
        # (libvips' random-access load holds more beside the pixels: 2 MiB more for a 12 Mpx
        # JPEG, at the same speed). A lent image is in memory already.
        try:
            image = image.copy_memory()
        except pyvips.Error as exc:
            raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    image = _vips_upright(image, orientation)
    output = _EncodedOutput(keep)
    target = pyvips.TargetCustom()
    target.on_write(output.write)
    try:
        # The pixels are computed here, as they are encoded; nothing of the source's metadata
        # is written (keep="none"). The settings are Pillow's: JPEG at 90 with 4:2:0, WebP at 90.
        if fmt == "jpeg":
            image.jpegsave_target(target, Q=90, subsample_mode="on", optimize_coding=False, keep="none")
        elif fmt == "webp":
            image.webpsave_target(target, Q=90, effort=4, keep="none")
        else:  # zlib level 6 with adaptive filters, as Pillow
            image.pngsave_target(target, compression=6, filter="all", keep="none")
    except pyvips.Error as exc:
        if output.size > MAX_STORED_BYTES:
            raise _too_large_to_store(field) from None
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    width, height = image.width, image.height
    # The decoded image (lent or libvips' own) goes before the output is joined, so the two
    # copies of the output that joining makes for a moment never sit beside it.
    del image, target, decoded
    return Normalised(data=output.joined(), sha256=output.digest.hexdigest(), width=width, height=height)


# What Pillow raises for bytes it cannot decode (a bomb's warning is raised as an error).
_UNDECODABLE = (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError,
                Image.DecompressionBombWarning, EOFError)


def _too_large_to_store(field: str | None) -> ImageRejected:
    return ImageRejected(ErrorCode.IMAGE_TOO_LARGE,
                         f"The image would take more than {size_text(MAX_STORED_BYTES)} to store.", field)


def process_raster(data: bytes, fmt: str, field: str | None = None) -> tuple[bytes, int, int]:
    """Validate and normalise a raster image. Returns (clean bytes, width, height)."""
    normalised = normalise_raster(data, fmt, field)
    return normalised.kept_bytes(), normalised.width, normalised.height


def normalise_raster(data: bytes, fmt: str, field: str | None = None, *, keep: bool = True) -> Normalised:
    """Validate and normalise a raster image: the stored bytes' fingerprint and dimensions, and
    the bytes themselves unless ``keep`` is false (a prepare needs only the fingerprint)."""
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
            _check_decode_cost(data, fmt, field)
            if getattr(image, "n_frames", 1) > 1 or getattr(image, "is_animated", False):
                raise ImageRejected(ErrorCode.ANIMATED_IMAGE, "Animated images are not accepted.", field)
            vips = None
            keep_as_is = False
            icc = image.info.get("icc_profile")
            if image.mode in _VIPS_MODES.get(fmt, ()) and (orientation := _orientation(image, data, fmt)):
                if icc:
                    _check_profile(icc, image.mode, field)
                # An sRGB profile's transform changes nothing (colour.py): it is skipped. A
                # palette's colours are converted by Pillow's littleCMS (colour.palette_to_srgb).
                converts = bool(icc) and not converts_to_itself(icc, "pillow" if image.mode == "P" else "vips")
                if fmt != "png" or orientation != 1 or converts:
                    vips = (orientation, icc if converts else None)
                else:
                    # An upright PNG without a profile (or with an sRGB one) may be kept as it
                    # is, if the stream check below proves it is exactly its image (a palette
                    # PNG's indices are checked in the stream).
                    keep_as_is = True
            if vips is None and not keep_as_is:
                image.load()
                # exif_transpose also reads an orientation given in XMP.
                upright = image.getexif().get(ExifTags.Base.Orientation, 1) not in range(2, 9)
                if not upright:
                    image = ImageOps.exif_transpose(image)
    except ImageRejected:
        raise
    except _UNDECODABLE as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    width, height = image.size
    if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
        raise ImageRejected(ErrorCode.IMAGE_DIMENSIONS, f"Each side must be {MIN_SIDE} to {MAX_SIDE} pixels.", field)
    if vips is not None and image.mode == "P":
        return _palette_normalise(image, data, *vips, field, keep)
    if vips is not None:
        # An image libvips must hold whole to turn it is decoded by Pillow, where Pillow's
        # memory is the decoded image, and lent to libvips (vips.lent_pixels); libvips holds it
        # from here on, alone, and lets it go before the encoded output is joined.
        lent = [_decoded_to_lend(image, field)] if vips[0] != 1 and _lend(image, data, fmt) else []
        del image
        return _vips_normalise(data, fmt, *vips, field, keep, lent)
    if keep_as_is or (fmt == "png" and upright and not image.info.get("icc_profile")):
        # The stream check inflates every scanline and checks its filter type, the stream's
        # end and checksum, and Pillow has read every other chunk (for the orientation): a PNG
        # that passes holds exactly its pixels, which any decoder reads. So an upright 8-bit
        # PNG is not decoded to be kept, and no decoded copy sits beside its file. A PNG of
        # another mode was decoded above, for its orientation; its pixels go first.
        image.close()
        parts = png_image_parts(data)
        if parts is not None:
            return _kept_png(parts, data, width, height, field, keep)
        # Rare: the chunks must be re-encoded, from pixels Pillow decodes and so proves.
        image = _decoded_upright_png(data, field)
    if fmt == "png":
        check_palette(image, field)
    clean = _encode(_to_srgb(image, field), fmt)
    if len(clean) > MAX_STORED_BYTES:
        raise _too_large_to_store(field)
    return Normalised(data=clean if keep else None, sha256=hashlib.sha256(clean).hexdigest(), width=width, height=height)


def _decoded_upright_png(data: bytes, field: str | None) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data), formats=["PNG"])
        image.load()
    except _UNDECODABLE as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field) from exc
    return image


def _kept_png(parts: list[memoryview], source: bytes, width: int, height: int, field: str | None,
              keep: bool) -> Normalised:
    """A PNG kept as its image chunks: fingerprinted from the views into its source, and
    joined into bytes only for a caller that stores them."""
    if sum(len(part) for part in parts) > MAX_STORED_BYTES:
        raise _too_large_to_store(field)
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return Normalised(data=joined_parts(parts, source) if keep else None, sha256=digest.hexdigest(),
                      width=width, height=height)
