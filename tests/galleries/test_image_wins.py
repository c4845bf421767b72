"""Palette PNGs kept byte for byte (their indices proven within the palette), the stream check
on zlib-ng or the standard zlib, sRGB profiles not converted, and palettes converted instead
of their pixels."""
from __future__ import annotations

import hashlib
import io
import struct
import zlib

import png as pypng
import pytest
from PIL import Image, ImageCms

from galleries.ingest import colour, inflate, png_stream, raster, vips
from galleries.ingest.png_stream import PNG_SIGNATURE, png_image_chunks
from galleries.ingest.raster import normalise_raster, process_raster
from galleries.ingest.rejection import ImageRejected
from galleries.models import Blob
from tests.support import images

W, H = 400, 330  # 330 rows of 400 pixels: at 1, 2 and 4 bits a row ends in whole bytes; 333 wide does not


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _palette(entries: int) -> bytes:
    return bytes(v for i in range(entries) for v in (i * 37 % 256, i * 91 % 256, i * 13 % 256))


def palette_png(depth=8, entries=None, width=W, height=H, index=None, filter_byte=0, trns=None,
                before=(), after=(), colour=3) -> bytes:
    """A palette PNG written by hand: rows of indices cycling through the palette."""
    entries = entries or min(1 << depth, 200)
    per_byte = 8 // depth
    rows = []
    for y in range(height):
        indices = [index if index is not None and x == width - 1 and y == height - 1 else (x + y) % min(entries, 1 << depth)
                   for x in range(width)]
        packed = bytearray()
        for start in range(0, width, per_byte):
            value = 0
            group = indices[start:start + per_byte]
            for k, i in enumerate(group):
                value |= i << (8 - depth * (k + 1))
            packed.append(value)
        rows.append(bytes([filter_byte]) + bytes(packed))
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0))
    plte = chunk(b"PLTE", _palette(entries))
    parts = [ihdr, *before, plte] + ([chunk(b"tRNS", trns)] if trns is not None else [])
    parts += [chunk(b"IDAT", zlib.compress(b"".join(rows))), *after, chunk(b"IEND", b"")]
    return PNG_SIGNATURE + b"".join(parts)


@pytest.fixture(params=["zlib-ng", "zlib"])
def inflater(request, monkeypatch):
    """Every check below on both inflaters: zlib-ng's and the standard module it replaces."""
    from zlib_ng import zlib_ng

    monkeypatch.setattr(png_stream, "zlib", zlib_ng if request.param == "zlib-ng" else zlib)
    return request.param


@pytest.mark.parametrize("depth", [1, 2, 4, 8])
@pytest.mark.parametrize("full", [True, False])
def test_a_palette_png_is_kept_byte_for_byte(depth, full, inflater):
    data = palette_png(depth, entries=None if full else max(1, (1 << depth) - 1))
    assert png_image_chunks(data) is data
    assert normalise_raster(data, "png").kept_bytes() == data
    assert pypng.Reader(bytes=data).read()[0] == W


def test_a_palette_png_with_its_opacities_is_kept_and_its_text_dropped(inflater):
    data = palette_png(8, entries=100, trns=bytes(range(50)), after=[chunk(b"tEXt", b"GPS\x0048.8,2.3")])
    kept = normalise_raster(data, "png").kept_bytes()
    assert b"GPS" not in kept and kept == palette_png(8, entries=100, trns=bytes(range(50)))


HOSTILE = {
    "an index past the palette (8 bits)": palette_png(8, entries=100, index=100),
    "an index past the palette (4 bits)": palette_png(4, entries=9, index=12),
    "an index past the palette (2 bits)": palette_png(2, entries=3, index=3),
    "an index past the palette (1 bit)": palette_png(1, entries=1, index=1),
    "an index past the palette in a row's last byte": palette_png(4, entries=9, width=333, index=15),
    "a palette after the data": palette_png(8, after=[chunk(b"PLTE", b"\x00" * 30)]),
    "two palettes": palette_png(8, before=[chunk(b"PLTE", b"\x00" * 30)]),
    "a palette in a greyscale image": palette_png(8, colour=0),
    "a palette longer than the bit depth allows": palette_png(2, entries=5),
    "a palette of a length not a multiple of three": palette_png(8, entries=200).replace(
        chunk(b"PLTE", _palette(200)),
        chunk(b"PLTE", _palette(200)[:-1])),
    "opacities before the palette": palette_png(8, before=[chunk(b"tRNS", b"\x00")]),
    "more opacities than entries": palette_png(8, entries=10, trns=b"\x00" * 11),
    "a filtered row with a partial palette": palette_png(8, entries=100, filter_byte=1),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_palette_png_is_never_kept(name, inflater):
    data = HOSTILE[name]
    assert png_image_chunks(data) is None
    try:
        clean, width, height = process_raster(data, "png")
    except ImageRejected:
        return
    assert clean != data
    decoded_width, decoded_height, rows, _ = pypng.Reader(bytes=clean).read()
    assert (decoded_width, decoded_height) == (width, height) and sum(1 for _ in rows) == height


def test_a_palette_png_added_through_the_api_is_stored_as_it_came(gs, _isolated_storage):
    out = io.BytesIO()
    Image.radial_gradient("L").resize((500, 400)).convert("RGB").convert(
        "P", palette=Image.Palette.ADAPTIVE, colors=64).save(out, "PNG")
    source = out.getvalue()
    gs.add_confirmed([gs.write("palette.png", source)])
    blob = Blob.objects.get()
    assert blob.sha256 == hashlib.sha256(source).hexdigest()
    stored = [p for p in _isolated_storage.rglob("*") if p.is_file() and p.read_bytes() == source]
    assert stored


def test_the_stream_check_falls_back_to_the_standard_zlib(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "zlib_ng", None)  # not installed
    assert inflate._best() is zlib
    monkeypatch.delitem(sys.modules, "zlib_ng")
    assert inflate._best() is not zlib


def _photo(size) -> Image.Image:
    """Smooth colour: a transform's rounding shows on it, as on a photograph."""
    return Image.merge("RGB", [Image.linear_gradient("L").resize(size), Image.radial_gradient("L").resize(size),
                               Image.linear_gradient("L").rotate(90).resize(size)])


def _p3() -> bytes:
    return images.p3_profile()


def _srgb() -> bytes:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def test_only_a_profile_whose_transform_changes_nothing_is_skipped():
    assert colour.converts_to_itself(_srgb(), "vips") and colour.converts_to_itself(_srgb(), "pillow")
    assert not colour.converts_to_itself(_p3(), "vips") and not colour.converts_to_itself(_p3(), "pillow")
    assert not colour.converts_to_itself(b"not a profile", "vips")


@pytest.mark.parametrize("fmt, turned", [("JPEG", True), ("JPEG", False), ("WEBP", False), ("PNG", True)])
def test_an_srgb_tagged_image_gives_the_same_pixels_with_the_transform_skipped(fmt, turned, monkeypatch):
    exif = Image.Exif()
    exif[0x0112] = 6 if turned else 1
    out = io.BytesIO()
    _photo((640, 480)).save(out, fmt, icc_profile=_srgb(), exif=exif.tobytes(), **({"quality": 90} if fmt != "PNG" else {}))
    data = out.getvalue()
    assert colour.converts_to_itself(_srgb(), "vips")  # proven once per profile, before the spy
    transforms = []
    pyvips = vips.libvips()
    real = pyvips.Image.icc_transform
    monkeypatch.setattr(pyvips.Image, "icc_transform", lambda self, *a, **k: transforms.append(a) or real(self, *a, **k))
    skipped = Image.open(io.BytesIO(process_raster(data, fmt.lower())[0]))
    assert transforms == []
    monkeypatch.setattr(raster, "converts_to_itself", lambda icc, engine: False)
    converted = Image.open(io.BytesIO(process_raster(data, fmt.lower())[0]))
    assert transforms
    assert skipped.size == converted.size and skipped.tobytes() == converted.tobytes()


def test_a_palette_is_converted_instead_of_its_pixels():
    image = Image.radial_gradient("L").resize((400, 320)).convert("RGB").convert(
        "P", palette=Image.Palette.ADAPTIVE, colors=64)
    expected = ImageCms.profileToProfile(image.convert("RGB"), ImageCms.ImageCmsProfile(io.BytesIO(_p3())),
                                         colour.SRGB, outputMode="RGB")
    image.info["icc_profile"] = _p3()
    converted = colour.to_srgb(image, None)
    assert converted.mode == "P" and converted.convert("RGB").tobytes() == expected.tobytes()
