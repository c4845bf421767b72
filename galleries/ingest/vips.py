"""libvips' part of normalising a raster: started once per process, the pixels Pillow decoded
lent to it without a copy, and one pipeline that decodes, converts, turns and encodes.

The pipeline runs in tiles over every core and turns an image while encoding it instead of
making a turned copy; its encoder writes its output a chunk at a time into the fingerprint,
and into memory only when the caller keeps the bytes, and is stopped at the stored limit
instead of finishing an output that would be refused. A JPEG it decodes for a turn is held
half at a time instead of whole (``_encode_in_bands``), but for a CMYK one, held whole in
three bytes a pixel for its four.
"""
from __future__ import annotations

import ctypes
import functools
import mmap
from types import ModuleType
from typing import Any

from PIL import Image

from .limits import fits_stored, too_large_to_store
from .normalised import EncodedOutput, Normalised
from .rejection import ImageRejected, undecodable, unreadable_profile
from .tiff_strips import TiffStrips


@functools.cache
def libvips() -> ModuleType:
    """libvips, started in the process that first processes a photograph: a Celery parent
    that forks its children never starts it, and no child inherits its threads. Its threads
    share one malloc arena where the process was started as the Procfile starts it
    (``MALLOC_ARENA_MAX=1``), so what its decoder frees its encoder reuses."""
    import pyvips

    # libvips keeps recent operations and their pixels for reuse; an upload is never
    # processed twice in a row, so the cache would only hold decoded images after their call.
    pyvips.cache_set_max(0)
    module: ModuleType = pyvips  # untyped: its stubs do not exist
    return module


# Pillow modes whose memory is exactly the decoded image, a pixel after another: one byte a
# pixel for grey, four for RGBA. (Pillow holds RGB and LA in four bytes a pixel, more than the
# image, and a CMYK image is held for its turn once converted to RGB, three bytes a pixel:
# those libvips decodes itself.)
LENDABLE_BANDS = {"L": 1, "RGBA": 4}


class _ArrowArray(ctypes.Structure):
    """The Arrow C data interface's array (a stable ABI), through which Pillow lends its pixels."""


_ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)), ("children", ctypes.POINTER(ctypes.POINTER(_ArrowArray))),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p),
]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def can_lend(image: Image.Image) -> bool:
    """Whether this Pillow can lend this image's pixels once decoded (Pillow 11.2 and later
    export them through Arrow)."""
    return image.mode in LENDABLE_BANDS and hasattr(Image.core, "new_block")


def decode_in_one_block(image: Image.Image) -> None:
    """Decode an opened image into one block of memory, rows one after another, which Pillow
    can lend whole (it otherwise spreads a large image over blocks of 16 MiB)."""
    image.im = Image.core.new_block(image.mode, image.size)
    image.load()


def lent_pixels(image: Image.Image) -> Any:
    """A libvips image over the pixels of a Pillow image decoded by ``decode_in_one_block``,
    without copying them: the decoded image is the only one in memory while libvips turns,
    converts and encodes it (decoding with libvips into memory holds 2.5 × 256 rows more,
    the line cache of its sequential loaders). Pillow's memory stays lent, and alive, until
    the last libvips image made from it is let go."""
    bands = LENDABLE_BANDS[image.mode]
    width, height = image.size
    capsule = image.im.__arrow_c_array__()
    array = ctypes.cast(_capsule_pointer(capsule, b"arrow_array"), ctypes.POINTER(_ArrowArray)).contents
    if array.n_children:  # four bytes a pixel: a fixed-size list, its bytes in its one child
        array = array.children[0].contents
    if array.length != width * height * bands or array.offset or array.n_buffers != 2:
        raise ValueError("Pillow lent pixels of an unexpected shape")

    class Pixels(ctypes.c_ubyte * (width * height * bands)):  # type: ignore[misc]
        lender: tuple[Image.Image, Any]

    pixels = Pixels.from_address(array.buffers[1])
    pixels.lender = (image, capsule)  # the capsule's release gives the memory back to Pillow
    vips = libvips().Image.new_from_memory(pixels, width, height, bands, "uchar")
    interpretation = "srgb" if image.mode == "RGBA" else "b-w"
    # The resolution libvips' own decoders give, which its encoders write (pixels a millimetre):
    # the file's, else 2.834 for a PNG and 72 dpi for a JPEG. (A resolution only in EXIF is
    # not read here; the pixels stored are the same either way.)
    if dpi := image.info.get("dpi"):
        xres, yres = dpi[0] / 25.4, dpi[1] / 25.4
    else:
        xres = yres = 2.834 if image.format == "PNG" else 72 / 25.4
    return vips.copy(interpretation=interpretation, xres=xres, yres=yres)


def lends(image: Image.Image, data: bytes, fmt: str) -> bool:
    """Whether to decode with Pillow and lend libvips the pixels, for a turn: where Pillow holds
    exactly the decoded image and decodes it as fast as libvips, straight into its memory. A
    JPEG, and a 16-bit PNG, which Pillow reads straight to 8 bits where libvips caches 16-bit
    rows (0.33× of a 4096-row image). Not an 8-bit PNG: Pillow inflates it at a third of
    libvips' speed (a flat 4096² RGBA in 300 ms against 100), more time than libvips' line
    cache (0.16×) costs memory. Not a WebP: Pillow copies the decoder's whole output."""
    return can_lend(image) and (fmt == "jpeg" or (fmt == "png" and data[24] == 16))


def upright(image: Any, orientation: int) -> Any:
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


def cmyk_to_rgb(image: Any) -> Any:
    """CMYK without a profile to RGB exactly as Pillow converts it (and the Pillow path stored
    it): each of C, M, Y with K to (255 − c)(255 − k) / 255, rounded, in whole numbers (the
    product of two bytes, then a table)."""
    product = image[0:3].invert() * image[3].invert()  # 16 bits a sample
    table = libvips().Image.new_from_memory(_divide_by_255(), 1 << 16, 1, 1, "uchar")  # not a copy
    return product.maplut(table).copy(interpretation="srgb")


def _loaded(data: bytes, fmt: str, decoded: Image.Image | None, icc: bytes | None, field: str | None) -> Any:
    """The image libvips reads: from the bytes, or over the pixels Pillow decoded."""
    pyvips = libvips()
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
        raise undecodable(field) from exc
    return image


def _in_srgb(image: Any, icc: bytes | None, field: str | None) -> Any:
    if icc:
        try:
            return image.icc_transform("srgb", embedded=True, intent="perceptual")
        except libvips().Error as exc:
            raise unreadable_profile(field) from exc
    if image.interpretation == "cmyk":
        return cmyk_to_rgb(image)
    return image


def _held_whole(image: Any, field: str | None) -> Any:
    """An upright image streams from decoder to encoder a strip at a time; a turn reads the
    image out of order, so it is decoded whole first, in one sequential pass into memory
    (libvips' random-access load holds more beside the pixels: 2 MiB more for a 12 Mpx JPEG,
    at the same speed). What the images before freed in the heap is given back first
    (``_give_back_freed_memory``)."""
    _give_back_freed_memory()
    try:
        return image.copy_memory()
    except libvips().Error as exc:
        raise undecodable(field) from exc


# Orientations whose first stored row is not the source's first row: a turn (the first stored
# row is a column of the source) or a flip upside down (its last row). Not 2, a mirror only.
TURNED_IN_BANDS = frozenset({3, 4, 5, 6, 7, 8})
# Rows of the stored image made at a time; a band is made of whole strips.
STRIP_ROWS = 128


class _TurnedBands:
    """A turned image's stored rows, made a strip at a time from two bands of the source (one
    for a CMYK source), the band before let go before the next is decoded (``_encode_in_bands``)."""

    def __init__(self, data: bytes, fmt: str, orientation: int, icc: bytes | None, field: str | None) -> None:
        self.data, self.fmt, self.orientation, self.icc, self.field = data, fmt, orientation, icc, field
        header = _loaded(data, fmt, None, icc, field)  # lazy: nothing is decoded until pixels are asked for
        turned = upright(_in_srgb(header, icc, field), orientation)  # lazy too: what the encoder is given
        self.width, self.height, self.bands = turned.width, turned.height, turned.bands
        self.interpretation, self.xres, self.yres = turned.interpretation, turned.xres, turned.yres
        self.unit = header.get("resolution-unit") if header.get_typeof("resolution-unit") else None
        self.transposed = orientation >= 5
        self.length = header.width if self.transposed else header.height  # source columns or rows, one a stored row
        self.mirrored = orientation in (3, 4, 7, 8)  # the first stored row is the source's last column or row
        middle = -(-self.length // 2 // STRIP_ROWS) * STRIP_ROWS
        # Held whole, a source of more bands than it is stored with (CMYK, four bytes a pixel,
        # stored as sRGB, three) is three quarters of one decoded image: it is decoded once.
        fewer = self.bands < header.bands
        self.edges = [0, middle, self.length] if middle < self.length and not fewer else [0, self.length]
        self.held: dict[int, Any] = {}
        self.failed: list[BaseException] = []

    def source_range(self, first: int, last: int) -> tuple[int, int]:
        """The source's columns or rows that stored rows ``first`` to ``last`` are made of."""
        return (self.length - last, self.length - first) if self.mirrored else (first, last)

    def _crop(self, image: Any, start: int, end: int) -> Any:
        return (image.crop(start, 0, end - start, image.height) if self.transposed
                else image.crop(0, start, image.width, end - start))

    def band(self, index: int) -> Any:
        if index not in self.held:
            self.held.clear()  # the band before is let go before the next is decoded
            start, end = self.source_range(self.edges[index], self.edges[index + 1])
            part = self._crop(_loaded(self.data, self.fmt, None, self.icc, self.field), start, end)
            self.held[index] = _held_in_a_mapping(_in_srgb(part, self.icc, self.field), self.field)
        return self.held[index]

    def strip(self, number: int) -> bytes:
        """Stored rows ``number × STRIP_ROWS`` onwards; b"" (the stream ends early, so the
        encoder fails) when they cannot be made, the error kept in ``failed``."""
        try:
            first = number * STRIP_ROWS
            index = 1 if len(self.edges) > 2 and first >= self.edges[1] else 0
            start, end = self.source_range(first, min(first + STRIP_ROWS, self.length))
            origin = self.source_range(self.edges[index], self.edges[index + 1])[0]
            rows: bytes = upright(self._crop(self.band(index), start - origin, end - origin),
                                  self.orientation).write_to_memory()
            return rows
        except BaseException as exc:  # raised once the encoder has stopped
            self.failed.append(exc)
            return b""


def _encode_in_bands(data: bytes, fmt: str, orientation: int, icc: bytes | None, field: str | None,
                     output: EncodedOutput) -> tuple[int, int]:
    """Encode a turned image held half at a time into ``output``; its size as stored (a CMYK
    source, stored in three bytes a pixel for its four, is held whole: one band, one decode).

    Held whole for its turn, a camera JPEG sat beside libvips' sequential decoder's line cache
    (512 rows of the full width, 0.17× a 4000×3000 image) when its last row was decoded, and
    beside its source bytes: 1.25× one decoded image before the encoder had written a byte.
    Instead the stored rows are made in two bands, each decoded by a pass of its own over the
    source (a band of stored rows is a band of the source's columns for a turn, of its rows
    upside down), converted to sRGB and held while the encoder reads its rows; the band before
    is let go first. The rows reach the encoder a strip at a time through ``TiffStrips``, which
    makes each strip as the encoder reads it. The stored bytes are those of the image turned
    whole; it costs a second decode and the strips made one at a time (a 12 Mpx JPEG in about
    225 ms instead of 120)."""
    pyvips = libvips()
    bands = _TurnedBands(data, fmt, orientation, icc, field)
    bands.band(0)  # decoded before the encoder starts, so a damaged source is refused here
    stream = TiffStrips(bands.width, bands.height, bands.bands, STRIP_ROWS, bands.strip)
    source = pyvips.SourceCustom()
    source.on_read(stream.read)
    source.on_seek(stream.seek)
    try:
        image = pyvips.Image.tiffload_source(source, access="sequential", fail_on="error")
        image = image.copy(interpretation=bands.interpretation, xres=bands.xres, yres=bands.yres)
        # Where the encoder writes a resolution (JFIF, when libvips has no EXIF support), in
        # the source's unit, inches when it gave none, as from the image turned whole.
        if bands.unit is not None:
            image.set_type(pyvips.GValue.gstr_type, "resolution-unit", bands.unit)
        elif image.get_typeof("resolution-unit"):
            image.remove("resolution-unit")
        _encode(image, fmt, output, field)
    except (pyvips.Error, ImageRejected):
        if not bands.failed:
            raise
    finally:
        bands.held.clear()
    if bands.failed:  # a strip that could not be made, whatever the encoder made of the stream's end
        raise bands.failed[0]
    return bands.width, bands.height


def _held_in_a_mapping(image: Any, field: str | None) -> Any:
    """An 8-bit image decoded in one sequential pass into memory of its own, an anonymous
    mapping, given back to the system as soon as the image is let go. Held by the C allocator,
    a band freed after another free had raised glibc's mmap threshold above its size stayed in
    the heap, resident, while the next band was decoded beside it (a camera JPEG's confirm
    read 1.69× one decoded image instead of 1.18×, as the threads' timing fell). The band
    image carries no metadata: its pixels alone are read (``_encode_in_bands``)."""
    _give_back_freed_memory()
    pixels = mmap.mmap(-1, image.width * image.height * image.bands)
    # Kept alive by the image made over it: pyvips holds the buffer it is given.
    held = libvips().Image.new_from_memory(pixels, image.width, image.height, image.bands, "uchar")
    try:
        image.write(held)
    except libvips().Error as exc:
        raise undecodable(field) from exc
    return held


def _give_back_freed_memory() -> None:
    """Give back to the system what glibc keeps of freed memory (the line caches of the
    decoders before, the encoders' buffers), before an image is held whole: a large image is
    held in a mapping of its own, which cannot reuse it, so the second image of an add was
    held beside what the first had freed (a turned 4096² PNG's confirm 1.23× one decoded image
    for the first, 1.31× for the second). A no-op under another C library."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    return getattr(ctypes.CDLL(None), "malloc_trim", None)


def _encode(image: Any, fmt: str, output: EncodedOutput, field: str | None) -> None:
    """Encode without metadata into ``output``: the pixels are computed here, as they are encoded."""
    pyvips = libvips()
    target = pyvips.TargetCustom()
    target.on_write(output.write)
    try:
        # Nothing of the source's metadata is written (keep="none"). The settings are Pillow's:
        # JPEG at 90 with 4:2:0, WebP at 90.
        if fmt == "jpeg":
            image.jpegsave_target(target, Q=90, subsample_mode="on", optimize_coding=False, keep="none")
        elif fmt == "webp":
            image.webpsave_target(target, Q=90, effort=4, keep="none")
        else:  # zlib level 6 with adaptive filters, as Pillow
            image.pngsave_target(target, compression=6, filter="all", keep="none")
    except pyvips.Error as exc:
        if not fits_stored(output.size):
            raise too_large_to_store(field) from None
        raise undecodable(field) from exc


def normalise(data: bytes, fmt: str, orientation: int, icc: bytes | None, field: str | None,
              keep: bool, lent: list[Image.Image]) -> Normalised:
    """Decode, turn, convert to sRGB (from ``icc`` when given) and encode without metadata, in
    one libvips pipeline whose output streams into its fingerprint (and into memory only when
    ``keep``); a JPEG turned or upside down, decoded by libvips, in two bands
    (``_encode_in_bands``). ``lent``: the image decoded by Pillow (``pillow.decoded_to_lend``),
    taken from the list so that nothing else holds it, whose pixels libvips reads where they lie."""
    decoded = lent.pop() if lent else None
    output = EncodedOutput(keep)
    if decoded is None and fmt == "jpeg" and orientation in TURNED_IN_BANDS:
        width, height = _encode_in_bands(data, fmt, orientation, icc, field, output)
        return output.normalised(width, height)
    image = _loaded(data, fmt, decoded, icc, field)
    # Colour first: it is the same per pixel before the turn as after, and a CMYK image held
    # for its turn is then held in three bytes a pixel, not four.
    image = _in_srgb(image, icc, field)
    if decoded is None and orientation != 1:  # a lent image is in memory already
        image = _held_whole(image, field)
    image = upright(image, orientation)
    _encode(image, fmt, output, field)
    width, height = image.width, image.height
    # The decoded image (lent or libvips' own) goes before the output is joined.
    del image, decoded
    return output.normalised(width, height)
