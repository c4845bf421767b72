"""The image mix the gallery benchmarks use: what users upload, not flat colour or noise alone.

Every image is made from a seed, so the same run makes the same bytes and two seeds make two
different images (a gallery stores each content once). Each kind names the path the product
takes with it: ``kept`` (an upright PNG without a colour profile, stored as its image chunks),
``encoded`` (decoded, turned, colour-managed and encoded again) or ``svg`` (checked, rendered).
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Callable

from .svg_normalise import svgs


@dataclass(frozen=True)
class Kind:
    name: str
    path: str  # kept, encoded or svg
    make: Callable[[int], bytes]
    extension: str


def _noise(size: tuple[int, int], seed: int, mode: str = "RGB"):
    from PIL import Image

    bands = len(mode)
    return Image.frombytes(mode, size, hashlib.shake_256(f"{seed}".encode()).digest(size[0] * size[1] * bands))


def _exif(orientation: int) -> bytes:
    from PIL import Image

    exif = Image.Exif()
    exif[0x0112] = orientation
    exif[0x010F] = "Arkme bench camera"
    return exif.tobytes()


def _icc() -> bytes:
    from PIL import ImageCms

    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def _photo(size: tuple[int, int], seed: int):
    """Smooth light and colour with fine grain: what a camera's JPEG looks like to a codec."""
    from PIL import Image, ImageChops

    small = _noise((size[0] // 64 + 2, size[1] // 64 + 2), seed).resize(size, Image.Resampling.BICUBIC)
    grain = _noise(size, seed + 1).point(lambda v: 104 + v // 5)
    return ImageChops.overlay(small, grain)


def photo_jpeg(seed: int, *, turned: bool = True) -> bytes:
    """A 12 Mpx (4000×3000) camera JPEG held sideways (EXIF orientation 6) with an ICC profile;
    ``turned=False``: upright, without a profile."""
    out = io.BytesIO()
    extra = {"exif": _exif(6), "icc_profile": _icc()} if turned else {}
    _photo((4000, 3000), seed).save(out, "JPEG", quality=85, **extra)
    return out.getvalue()


def photo_webp(seed: int) -> bytes:
    """A 1920×1080 lossy WebP photo."""
    out = io.BytesIO()
    _photo((1920, 1080), seed).save(out, "WEBP", quality=80)
    return out.getvalue()


def screenshot_png(seed: int) -> bytes:
    """A 2560×1600 screenshot: flat panels, buttons, lines of text."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (2560, 1600), (246, 247, 249))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 2560, 72), fill=(32, 40, 56))
    draw.rectangle((0, 72, 360, 1600), fill=(236, 238, 242))
    digest = hashlib.shake_256(f"screen{seed}".encode()).digest(4096)
    for row in range(60):
        y = 110 + row * 24
        width = 400 + digest[row] * 6
        draw.text((400, y), " ".join(f"item-{digest[row + k]:03d}" for k in range(width // 90)), fill=(40, 40, 40))
        if row % 7 == 0:
            draw.rounded_rectangle((2200, y - 4, 2480, y + 30), 8, fill=(40 + digest[row], 110, 220))
    for i in range(24):
        draw.text((24, 100 + i * 56), f"Section {digest[i + 100]}", fill=(60, 60, 70))
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6)
    return out.getvalue()


def flat_rgba_png(seed: int, *, turned: bool = False) -> bytes:
    """A 4096×4096 RGBA PNG of two flat colours: 64 MiB of pixels in a file of a fraction of a MiB.
    ``turned`` adds an EXIF orientation and an ICC profile, the costliest input the limits allow."""
    from PIL import Image

    image = Image.new("RGBA", (4096, 4096), (seed % 256, 90, 160, 200))
    image.paste((240, 200, 40, 255), (0, 0, 1024, 4096))  # a band, so that turning changes the pixels
    extra = {"exif": _exif(6), "icc_profile": _icc()} if turned else {}
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6, **extra)
    return out.getvalue()


def noise_png(seed: int) -> bytes:
    """1180×1180 RGB noise: a PNG of about 4 MiB that no filter can shrink."""
    out = io.BytesIO()
    _noise((1180, 1180), seed).save(out, "PNG", compress_level=6)
    return out.getvalue()


def _p3() -> bytes:
    """Display P3, libvips' built-in profile: what a phone tags its pictures with."""
    import pyvips

    image = pyvips.Image.black(8, 8, bands=3).copy(interpretation="srgb").icc_transform("p3")
    return bytes(image.get("icc-profile-data"))


def _palette_image(seed: int):
    """4096×4096 in a palette of 200 colours: a chart or illustration exported with a palette."""
    from PIL import Image, ImageDraw

    image = Image.new("P", (4096, 4096), 0)
    image.putpalette(bytes(v for i in range(200) for v in (i * 37 % 256, (i * 91 + seed) % 256, i * 13 % 256)))
    draw = ImageDraw.Draw(image)
    digest = hashlib.shake_256(f"palette{seed}".encode()).digest(4 * 400)
    for k in range(400):
        x, y = digest[4 * k] * 16, digest[4 * k + 1] * 16
        draw.rectangle((x, y, x + digest[4 * k + 2] * 4, y + 64), fill=digest[4 * k + 3] % 200)
    return image


def palette_png(seed: int, *, turned: bool = False) -> bytes:
    """A 4096×4096 palette PNG of 200 colours, 8 bits an index; ``turned`` adds an EXIF
    orientation and a Display P3 profile."""
    extra = {"exif": _exif(6), "icc_profile": _p3()} if turned else {}
    out = io.BytesIO()
    _palette_image(seed).save(out, "PNG", compress_level=6, **extra)
    return out.getvalue()


def static_gif(seed: int) -> bytes:
    """A static 4096×4096 GIF of 200 colours, the largest the limits allow (a GIF carries no
    EXIF orientation, and the product reads no other for it)."""
    out = io.BytesIO()
    _palette_image(seed).save(out, "GIF")
    return out.getvalue()


def _cmyk_profile() -> bytes:
    """libvips' built-in CMYK profile (a press profile, as print files carry; 0.9 MiB)."""
    import pyvips

    image = pyvips.Image.black(8, 8, bands=3).copy(interpretation="srgb").icc_transform("cmyk")
    return bytes(image.get("icc-profile-data"))


def cmyk_jpeg(seed: int, *, turned: bool = True) -> bytes:
    """A 4096×4096 CMYK JPEG (a print file: four full-resolution channels) of smooth light and
    colour, at quality 85: about 4 MiB with its profile, near the 5 MiB source limit.
    ``turned``: held sideways (EXIF orientation 6) with its CMYK profile; else upright, without
    one (converted as Pillow converts CMYK)."""
    import pyvips
    from PIL import Image

    size = (4096, 4096)
    rgb = _noise((size[0] // 128 + 2, size[1] // 128 + 2), seed).resize(size, Image.Resampling.BICUBIC)
    pixels = pyvips.Image.new_from_memory(rgb.tobytes(), *size, 3, "uchar").copy(interpretation="srgb")
    cmyk = Image.frombytes("CMYK", size, pixels.icc_transform("cmyk", intent="perceptual").write_to_memory())
    extra = {"exif": _exif(6), "icc_profile": _cmyk_profile()} if turned else {}
    out = io.BytesIO()
    cmyk.save(out, "JPEG", quality=85, **extra)
    return out.getvalue()


def rgba16_png(seed: int) -> bytes:
    """A 4096×4096 16-bit RGBA PNG in flat bands, turned by EXIF, with a Display P3 profile:
    the costliest 16-bit input the limits allow (a smooth 16-bit gradient passes 5 MiB)."""
    import pyvips

    band = (pyvips.Image.xyz(4096, 4096)[0] / 1024).cast("uchar")  # four vertical bands
    image = (band * 12000 + seed).bandjoin([band * 3000 + 20000, 40000 - band * 9000, band * 0 + 60000])
    image = image.cast("ushort").copy(interpretation="rgb16")
    image.set_type(pyvips.GValue.blob_type, "icc-profile-data", _p3())
    image.set_type(pyvips.GValue.blob_type, "exif-data", _exif(6))
    return bytes(image.pngsave_buffer(compression=6, keep="icc,exif"))


def _svg(name: str) -> Callable[[int], bytes]:
    def make(seed: int) -> bytes:
        # A comment makes each seed's source different; the rendering is the same work.
        return svgs()[name].replace(b"<svg ", f"<!-- {seed} --><svg ".encode(), 1)
    return make


KINDS = [
    Kind("photo jpeg 12 Mpx, turned, ICC", "encoded", photo_jpeg, "jpg"),
    Kind("photo jpeg 12 Mpx, upright", "encoded", lambda seed: photo_jpeg(seed, turned=False), "jpg"),
    Kind("screenshot png 2560×1600", "kept", screenshot_png, "png"),
    Kind("flat rgba png 4096²", "kept", flat_rgba_png, "png"),
    Kind("flat rgba png 4096², turned, ICC", "encoded", lambda seed: flat_rgba_png(seed, turned=True), "png"),
    Kind("noise png 1180²", "kept", noise_png, "png"),
    Kind("photo webp 1920×1080", "encoded", photo_webp, "webp"),
    Kind("svg simple", "svg", _svg("simple"), "svg"),
    Kind("svg 300 paths", "svg", _svg("300 paths"), "svg"),
    Kind("svg gradients", "svg", _svg("gradients"), "svg"),
]
# The kinds that went through Pillow alone (decode, a turned copy, Pillow's encoder) until
# 2026-12-06, palettes, 16-bit colour and CMYK, and GIF, which still does, at the largest size
# the limits allow: in peak_memory and libvips_peer.
PILLOW_PATH_KINDS = [
    Kind("palette png 4096²", "kept", palette_png, "png"),
    Kind("palette png 4096², turned, P3", "encoded", lambda seed: palette_png(seed, turned=True), "png"),
    Kind("rgba 16-bit png 4096², turned, P3", "encoded", rgba16_png, "png"),
    Kind("gif 4096²", "encoded", static_gif, "gif"),
    Kind("cmyk jpeg 4096², turned, CMYK profile", "encoded", cmyk_jpeg, "jpg"),
    Kind("cmyk jpeg 4096², upright", "encoded", lambda seed: cmyk_jpeg(seed, turned=False), "jpg"),
]
KIND = {kind.name: kind for kind in [*KINDS, *PILLOW_PATH_KINDS]}
