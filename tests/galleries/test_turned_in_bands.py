"""A turned JPEG decoded by libvips is held half at a time: each band of the stored rows is
decoded by a pass of its own over the source and let go before the next, and its rows reach
the encoder a strip at a time through an uncompressed TIFF made as it is read. What is
stored is byte for byte what turning the image whole stored."""
from __future__ import annotations

import gc
import io
import random

import pytest
from PIL import Image, ImageCms

from galleries.ingest import vips
from galleries.ingest.normalised import EncodedOutput
from galleries.ingest.raster import process_raster
from galleries.ingest.rejection import ImageRejected
from galleries.ingest.tiff_strips import TiffStrips
from tests.support import images


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def _photo(size: tuple[int, int], mode: str = "RGB") -> Image.Image:
    """Quadrants of different colours with noise over them: a turn or flip that went wrong,
    or a band in the wrong place, changes the stored bytes."""
    image = Image.new("RGB", size, (230, 40, 40))
    image.paste((40, 40, 230), (size[0] // 2, 0, size[0], size[1] // 3))
    image.paste((40, 200, 40), (0, size[1] // 3, size[0] // 3, size[1]))
    noise = Image.frombytes("RGB", size, random.Random(7).randbytes(size[0] * size[1] * 3))
    return Image.blend(image, noise, 0.2).convert(mode)


def _turned_whole(data: bytes, orientation: int, icc: bytes | None) -> bytes:
    """The image decoded whole, converted, held, turned and encoded: what was stored before."""
    image = vips._held_whole(vips._in_srgb(vips._loaded(data, "jpeg", None, icc, None), icc, None), None)
    output = EncodedOutput(keep=True)
    vips._encode(vips.upright(image, orientation), "jpeg", output, None)
    return output.joined() or b""


@pytest.mark.parametrize("orientation", [3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("mode,size", [("RGB", (900, 533)), ("L", (401, 700)), ("CMYK", (640, 385))])
def test_a_turned_jpeg_held_in_bands_is_stored_as_when_turned_whole(orientation, mode, size, monkeypatch):
    monkeypatch.setattr(vips, "can_lend", lambda image: False)  # a grey JPEG through libvips too
    out = io.BytesIO()
    _photo(size, mode).save(out, "JPEG", quality=92, exif=_exif(orientation))
    data = out.getvalue()
    clean, width, height = process_raster(data, "jpeg")
    assert (width, height) == (size[::-1] if orientation >= 5 else size)
    assert clean == _turned_whole(data, orientation, None)


def test_a_profile_and_a_resolution_in_centimetres_are_stored_as_when_turned_whole():
    out = io.BytesIO()
    _photo((700, 420)).save(out, "JPEG", quality=92, exif=_exif(6), icc_profile=images.p3_profile(),
                            dpi=(300, 150))
    jfif = bytearray(out.getvalue())
    assert jfif[6:11] == b"JFIF\0"
    jfif[13] = 2  # the JFIF density unit: dots per centimetre
    data = bytes(jfif)
    clean = process_raster(data, "jpeg")[0]
    assert clean == _turned_whole(data, 6, images.p3_profile())
    stored = Image.open(io.BytesIO(clean))
    assert "icc_profile" not in stored.info and "exif" not in stored.info and stored.size == (420, 700)


def test_each_band_is_let_go_before_the_next_is_decoded(monkeypatch):
    pyvips = vips.libvips()
    held: list[tuple[int, int]] = []
    alive_at_next: list[bool] = []
    real = vips._held_in_a_mapping

    def spy(image, field):
        gc.collect()
        alive_at_next.extend(any(isinstance(o, pyvips.Image) and (o.width, o.height) == size
                                 for o in gc.get_objects()) for size in held)
        whole = real(image, field)
        held.append((whole.width, whole.height))
        return whole

    monkeypatch.setattr(vips, "_held_in_a_mapping", spy)
    out = io.BytesIO()
    _photo((1000, 600)).save(out, "JPEG", quality=90, exif=_exif(6))
    assert process_raster(out.getvalue(), "jpeg")[1:] == (600, 1000)
    # Two bands of whole strips (128 stored rows, one source column each), at most half and a strip.
    assert held == [(512, 600), (488, 600)]
    assert alive_at_next == [False]


def test_a_damaged_turned_jpeg_is_refused_before_anything_is_encoded(monkeypatch):
    encoded = []
    monkeypatch.setattr(vips, "_encode", lambda *args: encoded.append(args))
    out = io.BytesIO()
    _photo((700, 500)).save(out, "JPEG", quality=90, exif=_exif(6))
    data = out.getvalue()
    with pytest.raises(ImageRejected) as caught:
        process_raster(data[: len(data) * 2 // 3], "jpeg")
    assert caught.value.code == "invalid_image" and encoded == []


def test_a_failure_in_a_later_band_is_raised_as_it_was(monkeypatch):
    calls = []
    real = vips._held_in_a_mapping

    def second_fails(image, field):
        calls.append(image.width)
        if len(calls) == 2:
            raise MemoryError
        return real(image, field)

    monkeypatch.setattr(vips, "_held_in_a_mapping", second_fails)
    out = io.BytesIO()
    _photo((700, 500)).save(out, "JPEG", quality=90, exif=_exif(8))
    with pytest.raises(MemoryError):
        process_raster(out.getvalue(), "jpeg")
    assert len(calls) == 2


@pytest.mark.parametrize("mode,size,rows", [("RGB", (37, 300), 128), ("L", (300, 37), 16), ("RGB", (5, 5), 8)])
def test_the_strip_stream_is_a_tiff_of_the_strips_each_made_once_in_order(mode, size, rows):
    image = _photo(size, mode)
    pixels = image.tobytes()
    line = size[0] * len(mode)
    made: list[int] = []

    def strip(number: int) -> bytes:
        made.append(number)
        return pixels[number * rows * line:(number + 1) * rows * line]

    stream = TiffStrips(size[0], size[1], len(mode), rows, strip)
    data = b""
    while chunk := stream.read(1000):
        data += bytes(chunk)
    assert len(data) == stream.length
    assert made == list(range(-(-size[1] // rows)))
    read = Image.open(io.BytesIO(data))
    assert read.mode == mode and read.size == size and read.tobytes() == pixels
    stream.seek(-3, 2)
    assert bytes(stream.read(10)) == pixels[-3:]


def test_the_strip_stream_carries_grey_or_rgb_only():
    with pytest.raises(ValueError):
        TiffStrips(10, 10, 4, 8, lambda number: b"")


def test_an_srgb_tagged_turned_jpeg_in_bands_skips_its_transform_as_before():
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    out = io.BytesIO()
    _photo((500, 340)).save(out, "JPEG", quality=90, exif=_exif(6), icc_profile=srgb)
    plain = io.BytesIO()
    _photo((500, 340)).save(plain, "JPEG", quality=90, exif=_exif(6))
    assert process_raster(out.getvalue(), "jpeg")[0] == process_raster(plain.getvalue(), "jpeg")[0]


@pytest.mark.parametrize("fmt,bands", [("JPEG", 2), ("PNG", 1)])
def test_what_the_heap_kept_is_given_back_before_an_image_or_a_band_is_held(fmt, bands, monkeypatch):
    """A held image or band lies in memory of its own, which cannot reuse what the decoders
    and encoders before freed: glibc gives that back first (a no-op under another C library)."""
    trims: list[int] = []
    monkeypatch.setattr(vips, "_malloc_trim", lambda: trims.append)
    out = io.BytesIO()
    _photo((600, 400), "RGB" if fmt == "JPEG" else "RGBA").save(out, fmt, exif=_exif(6))
    assert process_raster(out.getvalue(), fmt.lower())[1:] == (400, 600)
    assert trims == [0] * bands
    monkeypatch.setattr(vips, "_malloc_trim", lambda: None)
    assert process_raster(out.getvalue(), fmt.lower())[1:] == (400, 600)
