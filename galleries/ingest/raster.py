"""Image validation and normalisation: the checks, and the choice of who does the work.

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
of some 640 rows beside the image. An RGB or CMYK JPEG libvips decodes for a turn is held half
at a time: two bands of the stored rows, each decoded by a pass of its own over the source and
let go before the next, fed to the encoder a strip at a time (``tiff_strips``). Colour is
converted before the image is held, so a CMYK one is held in three bytes a pixel. A palette PNG stays one byte a pixel: Pillow decodes its
indices, its palette is converted on its own, and it is written out turned a strip at a time
(``png_palette.write_palette_png``). GIFs go through Pillow.
libvips' encoder writes its output a chunk at a time into the fingerprint, and into memory
only when the caller keeps the bytes (a prepare keeps only the fingerprint); it is stopped at
the stored limit instead of finishing an output that would be refused.

The work is done by one module per library: ``pillow``, ``vips``, and the project's own PNG
code (``png_stream``, ``png_palette``); the bounds are in ``limits``.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from PIL import Image

from arkme.kernel.errors import ErrorCode

from . import pillow, vips
from .colour import check_profile, converts_to_itself
from .limits import check_header_size, check_sides, check_source_size
from .normalised import Normalised, kept_png
from .png_stream import PNG_SIGNATURE, png_image_parts
from .rejection import ImageRejected

# A progressive JPEG has about ten scans; encoders that optimise scans stay well under 64.
MAX_JPEG_SCANS = 64
# Markers without a length: TEM, RST0-7, SOI, EOI.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8), 0xD8, 0xD9})
# In entropy-coded data, 0xFF followed by anything but stuffing (0x00) or a restart (RST0-7).
_NEXT_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7]")

# Pillow modes libvips takes for each format: 8-bit colour, grey or CMYK, with alpha where the
# format has it. A PNG's palette is turned and converted by its own writer (png_palette), and
# 16-bit grey PNGs and GIFs by Pillow.
_VIPS_MODES = {"jpeg": frozenset({"RGB", "L", "CMYK"}), "webp": frozenset({"RGB", "RGBA"}),
               "png": frozenset({"RGB", "RGBA", "L", "LA", "P"})}


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


def check_decode_cost(data: bytes, fmt: str, field: str | None) -> None:
    """Decoding time is bounded before it starts: a JPEG's number of scans."""
    if fmt == "jpeg":
        scans = jpeg_scans(data)
        if scans is not None and scans > MAX_JPEG_SCANS:
            raise ImageRejected(ErrorCode.IMAGE_TOO_COMPLEX,
                                f"A JPEG may have at most {MAX_JPEG_SCANS} scans.", field)


def check_still(image: Image.Image, field: str | None) -> None:
    if pillow.is_animated(image):
        raise ImageRejected(ErrorCode.ANIMATED_IMAGE, "Animated images are not accepted.", field)


class Route(enum.Enum):
    """Who makes the stored bytes of an image, chosen from its header."""

    AS_IS = enum.auto()  # an upright PNG that needs no conversion: its own chunks, once proven
    ONE_PASS = enum.auto()  # turned or converted by libvips' pipeline, or a palette PNG's writer
    PILLOW = enum.auto()  # decoded, turned, converted and encoded by Pillow


@dataclass(frozen=True)
class Plan:
    route: Route
    orientation: int = 1
    icc: bytes | None = None  # the profile to convert from; None when there is none or it is sRGB


def plan(image: Image.Image, data: bytes, fmt: str, field: str | None) -> Plan:
    """The route of an opened image; a profile it would be converted from is checked here."""
    if image.mode not in _VIPS_MODES.get(fmt, ()) or not (orientation := pillow.orientation(image, data, fmt)):
        return Plan(Route.PILLOW)
    icc = image.info.get("icc_profile")
    if icc:
        check_profile(icc, image.mode, field)
    # An sRGB profile's transform changes nothing (colour.py): it is skipped. A palette's
    # colours are converted by Pillow's littleCMS (colour.palette_to_srgb).
    converts = bool(icc) and not converts_to_itself(icc, "pillow" if image.mode == "P" else "vips")
    if fmt != "png" or orientation != 1 or converts:
        return Plan(Route.ONE_PASS, orientation, icc if converts else None)
    # An upright PNG without a profile (or with an sRGB one) may be kept as it is, if the
    # stream check proves it is exactly its image (a palette PNG's indices are checked in the
    # stream).
    return Plan(Route.AS_IS)


def process_raster(data: bytes, fmt: str, field: str | None = None) -> tuple[bytes, int, int]:
    """Validate and normalise a raster image. Returns (clean bytes, width, height)."""
    normalised = normalise_raster(data, fmt, field)
    return normalised.kept_bytes(), normalised.width, normalised.height


def normalise_raster(data: bytes, fmt: str, field: str | None = None, *, keep: bool = True) -> Normalised:
    """Validate and normalise a raster image: the stored bytes' fingerprint and dimensions, and
    the bytes themselves unless ``keep`` is false (a prepare needs only the fingerprint)."""
    check_source_size(data, field)
    upright = False
    with pillow.decoding(field):
        image = pillow.opened(data, fmt)
        check_header_size(*image.size, field)
        check_decode_cost(data, fmt, field)
        check_still(image, field)
        chosen = plan(image, data, fmt, field)
        if chosen.route is Route.PILLOW:
            image, upright = pillow.decoded_upright(image)
    check_sides(*image.size, field)
    if chosen.route is Route.ONE_PASS and image.mode == "P":
        return pillow.normalise_palette(image, data, chosen.orientation, chosen.icc, field, keep)
    if chosen.route is Route.ONE_PASS:
        # An image libvips must hold whole to turn it is decoded by Pillow, where Pillow's
        # memory is the decoded image, and lent to libvips (vips.lent_pixels); libvips holds it
        # from here on, alone, and lets it go before the encoded output is joined.
        lent = [pillow.decoded_to_lend(image, field)] if chosen.orientation != 1 and vips.lends(image, data, fmt) else []
        del image
        return vips.normalise(data, fmt, chosen.orientation, chosen.icc, field, keep, lent)
    if chosen.route is Route.AS_IS or (fmt == "png" and upright and not image.info.get("icc_profile")):
        return _kept_as_is(image, data, field, keep)
    return pillow.normalise_decoded(image, fmt, field, keep)


def _kept_as_is(image: Image.Image, data: bytes, field: str | None, keep: bool) -> Normalised:
    """The stream check inflates every scanline and checks its filter type, the stream's end
    and checksum, and Pillow has read every other chunk (for the orientation): a PNG that
    passes holds exactly its pixels, which any decoder reads. So an upright 8-bit PNG is not
    decoded to be kept, and no decoded copy sits beside its file. A PNG of another mode was
    decoded, for its orientation; its pixels go first."""
    width, height = image.size
    image.close()
    parts = png_image_parts(data)
    if parts is not None:
        return kept_png(parts, data, width, height, field, keep)
    # Rare: the chunks must be re-encoded, from pixels Pillow decodes and so proves.
    return pillow.normalise_decoded(pillow.decoded_png(data, field), "png", field, keep)
