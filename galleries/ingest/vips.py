"""libvips, started once per process, for the modules that decode, turn or convert with it, and
the pixels Pillow decoded lent to it without a copy."""
from __future__ import annotations

import ctypes
import functools
from types import ModuleType
from typing import Any

from PIL import Image

from arkme.kernel.native_memory import limit_malloc_arenas


@functools.cache
def libvips() -> ModuleType:
    """libvips, started in the process that first processes a photograph: a Celery parent
    that forks its children never starts it, and no child inherits its threads."""
    # Before libvips' first thread: what its decoder frees, its encoder may then reuse.
    limit_malloc_arenas()
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
