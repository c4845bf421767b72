"""Colour profiles on Pillow's path (littleCMS through ``ImageCms``), and which profiles are
sRGB already, so that converting from them would change nothing.

An image without a profile is taken as sRGB; an image tagged with an sRGB profile is the
same image, and converting it to sRGB is the identity. Cameras and phones tag JPEGs with
one of a handful of sRGB profiles (HP's ``sRGB IEC61966-2.1``, Google's compact one,
littleCMS' built-in): the transform cost a turned 12 Mpx JPEG about 120 ms for nothing.
A profile is not trusted by its name: it is proven sRGB when the very transform the image
would go through (libvips' or Pillow's, perceptual intent) leaves a probe of colours
unchanged, byte for byte: a 16-level grid of the cube and every level of each primary and
of grey. The answer is kept per profile (a few bytes to a few KiB; the probe costs 1–3 ms).
"""
from __future__ import annotations

import functools
import io
from typing import Any

from PIL import Image, ImageCms

from .rejection import undecodable, unreadable_profile
from .vips import libvips

SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
_GRID = range(0, 256, 17)  # 0, 17, …, 255


@functools.cache
def _probe() -> bytes:
    pixels = bytearray()
    for red in _GRID:
        for green in _GRID:
            for blue in _GRID:
                pixels += bytes((red, green, blue))
    for level in range(256):
        pixels += bytes((level, 0, 0, 0, level, 0, 0, 0, level, level, level, level))
    return bytes(pixels)


def _vips_converted(icc: bytes, probe: bytes) -> bytes:
    pyvips = libvips()
    image = pyvips.Image.new_from_memory(probe, len(probe) // 3, 1, 3, "uchar").copy(interpretation="srgb")
    image.set_type(pyvips.GValue.blob_type, "icc-profile-data", icc)
    return bytes(image.icc_transform("srgb", embedded=True, intent="perceptual").write_to_memory())


def _pillow_converted(icc: bytes, probe: bytes) -> bytes:
    image = Image.frombytes("RGB", (len(probe) // 3, 1), probe)
    ImageCms.profileToProfile(image, ImageCms.ImageCmsProfile(io.BytesIO(icc)), SRGB, outputMode="RGB", inPlace=True)
    return image.tobytes()


@functools.lru_cache(maxsize=64)
def converts_to_itself(icc: bytes, engine: str) -> bool:
    """Whether converting from this RGB profile to sRGB with ``engine`` ("vips" or "pillow")
    changes no colour of the probe: an sRGB profile, whose transform may be skipped."""
    try:
        if ImageCms.ImageCmsProfile(io.BytesIO(icc)).profile.xcolor_space.strip() != "RGB":
            return False
        probe = _probe()
        return (_vips_converted if engine == "vips" else _pillow_converted)(icc, probe) == probe
    except Exception:
        return False


def check_profile(icc: bytes, mode: str, field: str | None) -> None:
    """A profile libvips would convert from must be one Pillow can read, for the image's
    colour space (a palette's colours are RGB): libvips ignores a corrupt one with a warning,
    and the pixels would be stored unconverted where the Pillow path refuses the image."""
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(icc)).profile
    except (ImageCms.PyCMSError, OSError, ValueError) as exc:
        raise unreadable_profile(field) from exc
    if profile.xcolor_space.strip() != {"L": "GRAY", "LA": "GRAY", "CMYK": "CMYK"}.get(mode, "RGB"):
        raise unreadable_profile(field)


def to_srgb(image: Image.Image, field: str | None) -> Image.Image:
    # Without a profile the pixels are taken as sRGB; a CMYK JPEG is converted by the encoder.
    icc = image.info.get("icc_profile")
    if not icc or (image.mode in ("RGB", "RGBA") and converts_to_itself(icc, "pillow")):
        return image
    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        if image.mode == "P" and source.profile.xcolor_space.strip() == "RGB":
            return _palette_to_srgb(image, source)
        mode = "RGBA" if image.mode in ("RGBA", "LA", "PA") else "RGB"
        if image.mode not in ("RGB", "RGBA", "CMYK", "L"):
            image = image.convert("RGBA" if mode == "RGBA" else "RGB")
        if image.mode == mode:
            # The decoded pixels are this function's own: converting them where they lie
            # keeps a second full-size copy out of memory.
            ImageCms.profileToProfile(image, source, SRGB, outputMode=mode, inPlace=True)
        else:
            converted = ImageCms.profileToProfile(image, source, SRGB, outputMode=mode)
            image = converted if converted is not None else image
    except (ImageCms.PyCMSError, OSError, ValueError) as exc:
        raise unreadable_profile(field) from exc
    return image


def check_palette(image: Image.Image, field: str | None) -> None:
    """A decoded palette image's every index names an entry of its palette: an encoder keeps
    the indices it is given, so one past the palette would be stored for a strict decoder."""
    if image.mode == "P":
        entries = len(image.getpalette("RGB") or ()) // 3
        extrema = image.getextrema()
        if not isinstance(extrema[1], (int, float)) or extrema[1] >= entries:
            raise undecodable(field)


def _palette_to_srgb(image: Image.Image, source: Any) -> Image.Image:
    """A palette image's colours are its palette: converting its at most 256 entries converts
    every pixel, and the image stays a palette image of its own size (not three or four
    bytes a pixel, which converting the pixels made of it)."""
    image.putpalette(_converted_palette(bytes(image.getpalette("RGB") or b""), source), "RGB")
    return image


def _converted_palette(palette: bytes, source: Any) -> bytes:
    entries = Image.frombytes("RGB", (len(palette) // 3, 1), palette)
    ImageCms.profileToProfile(entries, source, SRGB, outputMode="RGB", inPlace=True)
    return entries.tobytes()


def palette_to_srgb(palette: bytes, icc: bytes, field: str | None) -> bytes:
    """A PNG's palette (PLTE, RGB triples) converted from its RGB profile to sRGB, as
    ``to_srgb`` converts a decoded palette image's: the colours of every pixel, in 256 at most."""
    try:
        return _converted_palette(palette, ImageCms.ImageCmsProfile(io.BytesIO(icc)))
    except (ImageCms.PyCMSError, OSError, ValueError) as exc:
        raise unreadable_profile(field) from exc

