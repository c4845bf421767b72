"""The kinds Pillow decoded and turned with a second full-size copy: a grey JPEG and a 16-bit
RGBA PNG held sideways, decoded by Pillow into one block and lent to libvips, which turns,
converts and encodes them without a copy; CMYK decoded by libvips and converted (as Pillow converts it,
without a profile) before it is held for a turn; a palette PNG written out turned a strip at
a time, a palette PNG of its bit depth with its palette converted and its opacities kept."""
from __future__ import annotations

import gc
import io
import struct
import zlib

import pytest
from PIL import Image, ImageCms, ImageOps

from galleries.ingest import colour, limits, vips
from galleries.ingest.normalised import EncodedOutput
from galleries.ingest.raster import process_raster
from galleries.ingest.rejection import ImageRejected
from tests.support import images


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _palette_image(depth: int, size=(400, 330)) -> Image.Image:
    entries = min(1 << depth, 200) - (1 if depth > 1 else 0)  # a partial palette, except at 1 bit
    image = Image.new("P", size)
    image.putdata([(x * 7 + y * 3) % entries for y in range(size[1]) for x in range(size[0])])
    image.putpalette(bytes((i * 37 + band * 91) % 256 for i in range(entries) for band in range(3)))
    return image


def _palette_png(depth: int, orientation: int = 6, icc: bytes | None = None, transparency: bytes | None = None) -> bytes:
    out = io.BytesIO()
    extra = {"transparency": transparency} if transparency is not None else {}
    if icc:
        extra["icc_profile"] = icc
    _palette_image(depth).save(out, "PNG", bits=depth, exif=_exif(orientation), **extra)
    return out.getvalue()


def _rgba16_png(orientation: int = 6, icc: bytes | None = None, size=(480, 360)) -> bytes:
    """A 16-bit RGBA PNG of two quadrants, which Pillow reads as 8-bit RGBA."""
    pyvips = vips.libvips()
    left = (pyvips.Image.xyz(*size)[0] < size[0] // 2).ifthenelse([64000, 5000, 5000, 65535], [5000, 5000, 64000, 40000])
    image = left.cast("ushort").copy(interpretation="rgb16")
    image.set_type(pyvips.GValue.blob_type, "exif-data", _exif(orientation))
    if icc:
        image.set_type(pyvips.GValue.blob_type, "icc-profile-data", icc)
    return bytes(image.pngsave_buffer(keep="exif,icc"))


def _no_libvips_decode(monkeypatch) -> None:
    pyvips = vips.libvips()
    for name in ("pngload_source", "jpegload_source"):
        monkeypatch.setattr(pyvips.Image, name, lambda *a, **k: pytest.fail("libvips decoded an image Pillow can lend"))


@pytest.mark.parametrize("orientation", range(2, 9))
def test_a_palette_png_is_turned_as_exif_transpose_turns_it(orientation):
    source = _palette_png(8, orientation=orientation)
    clean, width, height = process_raster(source, "png")
    expected = ImageOps.exif_transpose(Image.open(io.BytesIO(source)))
    stored = Image.open(io.BytesIO(clean))
    assert (width, height) == stored.size == expected.size and stored.tobytes() == expected.tobytes()


@pytest.mark.parametrize("depth", [1, 2, 4, 8])
@pytest.mark.parametrize("profiled", [False, True])
def test_a_turned_palette_png_stays_a_palette_png_of_its_depth(depth, profiled, monkeypatch):
    _no_libvips_decode(monkeypatch)
    entries = min(1 << depth, 200) - (1 if depth > 1 else 0)
    opacities = bytes(i * 5 % 256 for i in range(entries))
    source = _palette_png(depth, orientation=8, icc=images.p3_profile() if profiled else None, transparency=opacities)
    clean, width, height = process_raster(source, "png")
    stored = Image.open(io.BytesIO(clean))
    expected = ImageOps.exif_transpose(Image.open(io.BytesIO(source)))
    expected = colour.to_srgb(expected, None)  # the Pillow path's conversion: the palette's, not the pixels'
    assert stored.mode == "P" and clean[24] == depth and clean[25] == 3  # bit depth and colour type
    assert (width, height) == stored.size == expected.size == (330, 400)
    assert stored.tobytes() == expected.tobytes()
    assert stored.getpalette() == expected.getpalette()
    assert stored.info.get("transparency") == opacities  # its opacities are pixels, not metadata
    assert not stored.getexif() and "icc_profile" not in stored.info


def test_one_transparent_palette_entry_is_kept():
    source = _palette_png(8, transparency=bytes([255] * 5 + [0]))
    assert Image.open(io.BytesIO(source)).info["transparency"] == 5  # Pillow's form for it
    stored = Image.open(io.BytesIO(process_raster(source, "png")[0]))
    assert stored.info["transparency"] == 5


@pytest.mark.parametrize("depth, entries, index", [(8, 100, 150), (4, 9, 12), (2, 3, 3)])
def test_a_turned_palette_png_with_an_index_past_its_palette_is_refused(depth, entries, index):
    width, height = 400, 330
    per_byte = 8 // depth
    rows = []
    for y in range(height):
        values = [index if (x, y) == (width - 1, height - 1) else (x + y) % entries for x in range(width)]
        packed = bytearray()
        for start in range(0, width, per_byte):
            value = 0
            for k, i in enumerate(values[start:start + per_byte]):
                value |= i << (8 - depth * (k + 1))
            packed.append(value)
        rows.append(b"\x00" + bytes(packed))
    data = b"\x89PNG\r\n\x1a\n" + b"".join([
        _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, 3, 0, 0, 0)),
        _chunk(b"eXIf", _exif(6)[6:]),  # "Exif\0\0" is not part of the chunk
        _chunk(b"PLTE", bytes(i % 256 for i in range(3 * entries))),
        _chunk(b"IDAT", zlib.compress(b"".join(rows))),
        _chunk(b"IEND", b""),
    ])
    with pytest.raises(ImageRejected) as refused:
        process_raster(data, "png")
    assert refused.value.code == "invalid_image"


@pytest.mark.parametrize("kind, lends", [("grey jpeg", True), ("rgba 16-bit png", True), ("rgba png", False),
                                         ("grey png", False), ("rgb jpeg", False), ("rgba webp", False)])
def test_a_turned_image_pillow_decodes_whole_and_fast_is_lent_to_libvips(kind, lends, monkeypatch):
    """Lent where Pillow holds exactly the decoded image and decodes it as fast as libvips (a
    JPEG; a 16-bit PNG, which libvips would cache at 16 bits); an 8-bit PNG, which Pillow
    inflates at a third of libvips' speed, and RGB, which Pillow holds in four bytes a pixel,
    libvips decodes."""
    out = io.BytesIO()
    quadrants = Image.new("RGB", (480, 360), (250, 20, 20))
    quadrants.paste((20, 20, 250), (240, 180, 480, 360))
    mode, fmt = {"grey jpeg": ("L", "JPEG"), "rgba png": ("RGBA", "PNG"), "grey png": ("L", "PNG"),
                 "rgb jpeg": ("RGB", "JPEG"), "rgba webp": ("RGBA", "WEBP")}.get(kind, ("RGBA", "PNG"))
    if kind == "rgba 16-bit png":
        source = _rgba16_png()
    else:
        quadrants.convert(mode).save(out, fmt, exif=_exif(6), **({"quality": 95} if fmt != "PNG" else {}))
        source = out.getvalue()
    lent = []
    real = vips.lent_pixels
    monkeypatch.setattr(vips, "lent_pixels", lambda image: lent.append(image.mode) or real(image))
    if lends:
        _no_libvips_decode(monkeypatch)
    clean, width, height = process_raster(source, fmt.lower())
    assert lent == ([mode] if lends else []) and (width, height) == (360, 480)
    stored = Image.open(io.BytesIO(clean)).convert("RGB")
    expected = ImageOps.exif_transpose(Image.open(io.BytesIO(source))).convert("RGB")
    assert stored.size == expected.size
    for x, y in ((60, 60), (300, 420)):  # a quadrant that moved with the turn, and one that did not
        assert max(abs(a - b) for a, b in zip(stored.getpixel((x, y)), expected.getpixel((x, y)), strict=True)) < 12


def test_a_turned_cmyk_jpeg_is_held_in_rgb(monkeypatch):
    """Converted as it is decoded, then held for its turn: three bytes a pixel, not four, so
    held whole it is three quarters of the decoded image, and its source is decoded once."""
    held: list[tuple[int, str]] = []
    real = vips._held_in_a_mapping
    monkeypatch.setattr(vips, "_held_in_a_mapping",
                        lambda image, field: held.append((image.bands, image.interpretation)) or real(image, field))
    out = io.BytesIO()
    Image.new("CMYK", (400, 320), (0, 255, 255, 0)).save(out, "JPEG", exif=_exif(6))
    assert process_raster(out.getvalue(), "jpeg")[1:] == (320, 400)
    assert held == [(3, "srgb")]  # one band, not two passes over the source (test_turned_in_bands)


def test_pixels_lent_or_decoded_by_libvips_are_the_same_pixels(monkeypatch):
    """Lending changes where the pixels come from, not what is stored: a 16-bit PNG decodes to
    the same 8-bit pixels in either library (the high byte), and is stored byte for byte alike."""
    source = _rgba16_png(icc=images.p3_profile())
    lent = process_raster(source, "png")[0]
    monkeypatch.setattr(vips, "can_lend", lambda image: False)
    assert process_raster(source, "png")[0] == lent


@pytest.mark.parametrize("kind", ["palette", "lent rgba"])
def test_the_decoded_image_is_let_go_before_the_encoded_output_is_joined(kind, monkeypatch):
    import pyvips

    core = type(Image.core.new("L", (1, 1)))
    alive: list[tuple[int, int]] = []
    joined = EncodedOutput.joined

    def spy(self):
        gc.collect()
        alive.append((sum(isinstance(o, pyvips.Image) for o in gc.get_objects()),
                      sum(isinstance(o, Image.Image) and o.size == (400, 330) and isinstance(getattr(o, "_im", None), core)
                          for o in gc.get_objects())))
        return joined(self)

    source = _palette_png(8) if kind == "palette" else _rgba16_png(size=(400, 330))
    monkeypatch.setattr(EncodedOutput, "joined", spy)
    clean, width, height = process_raster(source, "png")
    assert alive == [(0, 0)] and (width, height) == (330, 400)


def test_cmyk_without_a_profile_is_converted_exactly_as_pillow_converts_it():
    pixels = bytes(v for k in range(0, 256, 3) for c in range(256) for v in (c, 255 - c, (c * 7 + k) % 256, k))
    size = (256, len(pixels) // 4 // 256)
    cmyk = vips.libvips().Image.new_from_memory(pixels, *size, 4, "uchar").copy(interpretation="cmyk")
    converted = vips.cmyk_to_rgb(cmyk)
    assert converted.bands == 3 and converted.format == "uchar"
    assert converted.write_to_memory() == Image.frombytes("CMYK", size, pixels).convert("RGB").tobytes()


@pytest.mark.parametrize("turned", [False, True])
def test_a_cmyk_jpeg_is_stored_as_rgb_in_the_colours_pillow_gave_it(turned):
    out = io.BytesIO()
    Image.new("CMYK", (400, 320), (0, 255, 255, 0)).save(out, "JPEG", quality=95, exif=_exif(6 if turned else 1))
    clean, width, height = process_raster(out.getvalue(), "jpeg")
    stored = Image.open(io.BytesIO(clean))
    assert stored.mode == "RGB" and (width, height) == ((320, 400) if turned else (400, 320))
    red, green, blue = stored.getpixel((10, 10))
    assert red > 240 and green < 15 and blue < 15  # Pillow's (255 − c)(255 − k) / 255: red


def test_a_cmyk_jpeg_is_converted_from_its_profile():
    cmyk_profile = vips.libvips().Image.black(8, 8, bands=3).copy(interpretation="srgb").icc_transform("cmyk")
    icc = bytes(cmyk_profile.get("icc-profile-data"))
    ink = Image.new("CMYK", (400, 320), (0, 200, 200, 20))
    out = io.BytesIO()
    ink.save(out, "JPEG", quality=95, icc_profile=icc, exif=_exif(6))
    stored = Image.open(io.BytesIO(process_raster(out.getvalue(), "jpeg")[0]))
    expected = ImageCms.profileToProfile(Image.open(io.BytesIO(out.getvalue())), ImageCms.ImageCmsProfile(io.BytesIO(icc)),
                                         colour.SRGB, outputMode="RGB")
    assert stored.size == (320, 400) and "icc_profile" not in stored.info
    got, want = stored.getpixel((10, 10)), expected.getpixel((10, 10))
    assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 6, (got, want)


def test_a_cmyk_jpeg_with_a_profile_for_another_colour_space_is_refused():
    out = io.BytesIO()
    Image.new("CMYK", (400, 320), (0, 200, 200, 20)).save(
        out, "JPEG", icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    with pytest.raises(ImageRejected) as refused:
        process_raster(out.getvalue(), "jpeg")
    assert refused.value.code == "invalid_image" and "colour profile" in str(refused.value)


def test_a_gif_keeps_its_transparent_entry():
    out = io.BytesIO()
    _palette_image(8).save(out, "GIF", transparency=3)
    stored = Image.open(io.BytesIO(process_raster(out.getvalue(), "gif")[0]))
    assert stored.format == "GIF" and stored.info.get("transparency") == 3


def test_a_palette_png_past_the_stored_limit_is_stopped_and_refused(monkeypatch):
    monkeypatch.setattr(limits, "MAX_STORED_BYTES", 2_000)
    noisy = Image.frombytes("L", (400, 330), bytes((i * 7919) % 251 for i in range(400 * 330))).convert("P")
    out = io.BytesIO()
    noisy.save(out, "PNG", exif=_exif(6))
    with pytest.raises(ImageRejected) as refused:
        process_raster(out.getvalue(), "png")
    assert refused.value.code == "image_too_large"


def test_a_turned_palette_png_whose_palette_outgrows_its_depth_is_written_at_8_bits():
    rows = b"".join(b"\x00" + bytes([0x01, 0x23] * 200) for _ in range(330))  # 4-bit indices 0–3
    data = b"\x89PNG\r\n\x1a\n" + b"".join([
        _chunk(b"IHDR", struct.pack(">IIBBBBB", 800, 330, 4, 3, 0, 0, 0)),
        _chunk(b"eXIf", _exif(6)[6:]),
        _chunk(b"PLTE", bytes(range(60))),  # 20 entries: more than 4 bits name
        _chunk(b"tRNS", bytes(25)),  # more opacities than entries
        _chunk(b"IDAT", zlib.compress(rows)),
        _chunk(b"IEND", b""),
    ])
    try:
        clean, width, height = process_raster(data, "png")
    except ImageRejected:
        return  # Pillow may refuse it outright
    assert clean[24] == 8 and (width, height) == (330, 800)
    stored = Image.open(io.BytesIO(clean))
    assert len(stored.getpalette()) // 3 == 20 and len(stored.info["transparency"]) <= 20
    expected = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    assert stored.tobytes() == expected.tobytes()
