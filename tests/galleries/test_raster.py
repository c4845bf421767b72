"""Raster validation and normalisation."""
from __future__ import annotations

import hashlib
import io
import random

import pytest
from PIL import Image, ImageCms, ImageFile, ImageOps

from galleries.ingest import limits, raster, vips
from galleries.ingest.normalised import EncodedOutput
from galleries.ingest.process_image import image_facts, process_image
from galleries.ingest.raster import process_raster, sniff
from galleries.ingest.rejection import ImageRejected
from tests.support import images


def code_of(fn, *args):
    with pytest.raises(ImageRejected) as caught:
        fn(*args)
    return caught.value.code


@pytest.mark.parametrize("fmt,expected", [("PNG", "png"), ("JPEG", "jpeg"), ("WEBP", "webp"), ("GIF", "gif")])
def test_format_comes_from_the_bytes(fmt, expected):
    assert sniff(images.image(fmt)) == expected


@pytest.mark.parametrize("data", [b"", b"hello world", b"%PDF-1.4 ...", b"BM\x00\x00" + b"\x00" * 100,
                                  b"\x1f\x8b\x08\x00svgz", b"II*\x00tiff"])
def test_other_formats_are_refused(data):
    assert code_of(sniff, data) == "unsupported_format"


@pytest.mark.parametrize("size,ok", [((320, 320), True), ((4096, 320), True), ((319, 400), False),
                                     ((400, 319), False), ((4097, 400), False)])
def test_each_side_must_be_320_to_4096(size, ok):
    data = images.png(size)
    if ok:
        assert process_raster(data, "png")[1:] == size
    else:
        assert code_of(process_raster, data, "png") == "image_dimensions"


def test_pixel_bomb_is_refused_before_decoding():
    # A 4097x4097 header: refused from the header, without decoding 50 MB of pixels.
    data = images.png((4097, 4097))
    assert code_of(process_raster, data, "png") == "image_dimensions"


def test_truncated_image_is_refused():
    data = images.png((400, 400))
    assert code_of(process_raster, data[: len(data) // 2], "png") == "invalid_image"


def test_animated_gif_is_refused_static_is_kept():
    assert code_of(process_raster, images.animated_gif(), "gif") == "animated_image"
    clean, w, h = process_raster(images.image("GIF"), "gif")
    assert Image.open(io.BytesIO(clean)).format == "GIF"


def test_exif_orientation_is_applied_and_exif_dropped():
    clean, width, height = process_raster(images.jpeg_with_gps_and_orientation((600, 400), orientation=6), "jpeg")
    assert (width, height) == (400, 600)
    stored = Image.open(io.BytesIO(clean))
    assert stored.size == (400, 600)
    assert not stored.getexif()
    assert b"SecretCam" not in clean and b"Exif" not in clean


def test_png_text_xmp_and_icc_are_dropped():
    source = images.png_with_text_and_icc()
    assert b"secret" in source
    clean, _, _ = process_raster(source, "png")
    stored = Image.open(io.BytesIO(clean))
    assert b"secret" not in clean
    assert "icc_profile" not in stored.info and not stored.text
    # visually the same image
    assert stored.convert("RGB").getpixel((10, 10)) == Image.open(io.BytesIO(source)).convert("RGB").getpixel((10, 10))


def test_cmyk_is_converted_to_rgb():
    out = io.BytesIO()
    Image.new("CMYK", (400, 400), (0, 255, 255, 0)).save(out, "JPEG")
    clean, _, _ = process_raster(out.getvalue(), "jpeg")
    stored = Image.open(io.BytesIO(clean))
    assert stored.mode == "RGB"
    red, green, blue = stored.getpixel((10, 10))
    assert red > 200 and green < 60 and blue < 60  # still red


def test_source_over_5_mib_is_refused():
    data = images.png((400, 400)) + b"\x00" * (5 * 1024 * 1024)
    assert code_of(process_raster, data, "png") == "image_too_large"


def test_process_image_fingerprints_the_stored_bytes():
    import hashlib
    result = process_image(images.png((400, 400)))
    assert result.sha256 == hashlib.sha256(result.data).hexdigest()
    assert (result.width, result.height, result.format) == (400, 400, "png")


def _turned_profiled_png() -> bytes:
    out = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.new("RGBA", (600, 400), (200, 40, 40, 255)).save(
        out, "PNG", exif=exif.tobytes(), icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    return out.getvalue()


@pytest.mark.parametrize("make", [
    lambda: images.jpeg_with_gps_and_orientation(),  # libvips, turned
    _turned_profiled_png,  # libvips, turned and converted
    lambda: images.image("WEBP"),  # libvips
    lambda: images.png((400, 400)),  # kept as its image chunks
    lambda: images.image("GIF"),  # Pillow
    lambda: images.svg(),  # rendered
], ids=["jpeg", "png-turned", "webp", "png-kept", "gif", "svg"])
def test_the_fingerprint_alone_is_the_fingerprint_of_the_stored_bytes(make, encoder_keeps):
    """Prepare asks only for the fingerprint: libvips' encoder streams into the hash and its
    output is never held. It must fingerprint exactly what confirm will store."""
    data = make()
    stored = process_image(data)
    kept = encoder_keeps
    kept.clear()
    facts = image_facts(data)
    assert (facts.sha256, facts.width, facts.height, facts.format) == (
        stored.sha256, stored.width, stored.height, stored.format)
    assert stored.sha256 == hashlib.sha256(stored.data).hexdigest()
    assert not any(kept)  # no encoder output was kept for the fingerprint


def test_an_encoding_that_outgrows_the_stored_limit_is_stopped_and_refused(monkeypatch):
    """libvips writes its output a chunk at a time; past the stored limit it is stopped there,
    not after the whole output has been made and held."""
    seen: list[int] = []
    real = EncodedOutput.write

    def spy(self, chunk):
        seen.append(self.size + len(chunk))
        return real(self, chunk)

    monkeypatch.setattr(limits, "MAX_STORED_BYTES", 20_000)
    monkeypatch.setattr(EncodedOutput, "write", spy)
    noisy = Image.frombytes("RGB", (800, 600), bytes(random.Random(5).randbytes(800 * 600 * 3)))
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    noisy.save(out, "JPEG", quality=95, exif=exif.tobytes())
    for fn in (process_raster, lambda *a: raster.normalise_raster(*a, keep=False)):
        seen.clear()
        assert code_of(fn, out.getvalue(), "jpeg") == "image_too_large"
        assert seen and seen[-1] > 20_000 and all(size <= 20_000 for size in seen[:-1])


def test_decoding_is_deterministic_so_confirm_can_check_content():
    data = images.jpeg_with_gps_and_orientation()
    assert process_image(data).sha256 == process_image(data).sha256


def test_clean_png_keeps_its_image_chunks_and_drops_every_other():
    source = images.png_with_metadata()
    clean, width, height = process_raster(source, "png")
    kinds = [kind for kind, _ in images.png_chunks(clean)]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and set(kinds) == {b"IHDR", b"IDAT", b"IEND"}
    # The pixels are the user's, byte for byte; text, resolution and trailing bytes are gone.
    idat = [payload for kind, payload in images.png_chunks(source) if kind == b"IDAT"]
    assert [payload for kind, payload in images.png_chunks(clean) if kind == b"IDAT"] == idat
    assert b"secret" not in clean and b"SecretCam" not in clean
    stored = Image.open(io.BytesIO(clean))
    assert (width, height) == stored.size and not stored.text and "dpi" not in stored.info
    assert stored.tobytes() == Image.open(io.BytesIO(source)).tobytes()


@pytest.mark.parametrize("make", [images.png_with_exif_orientation, images.png_with_xmp_orientation])
def test_png_with_an_orientation_is_turned_upright_and_encoded_again(make):
    clean, width, height = process_raster(make((600, 400), orientation=6), "png")
    assert (width, height) == (400, 600)
    stored = Image.open(io.BytesIO(clean))
    assert stored.size == (400, 600) and not stored.getexif() and not stored.text


def test_png_with_a_colour_profile_is_converted_not_kept():
    def idat(data):
        return [payload for kind, payload in images.png_chunks(data) if kind == b"IDAT"]


    out = io.BytesIO()
    Image.new("RGB", (400, 400), (120, 10, 10)).save(out, "PNG", icc_profile=images.p3_profile())
    source = out.getvalue()
    clean, _, _ = process_raster(source, "png")
    assert idat(clean) != idat(source) and "icc_profile" not in Image.open(io.BytesIO(clean)).info
    # An sRGB profile converts to itself: the PNG is kept, without the profile.
    tagged = images.png_with_text_and_icc()
    clean, _, _ = process_raster(tagged, "png")
    assert idat(clean) == idat(tagged) and "icc_profile" not in Image.open(io.BytesIO(clean)).info
    plain = images.png_with_metadata()
    assert idat(process_raster(plain, "png")[0]) == idat(plain)


@pytest.mark.parametrize("damage", ["idat_checksum", "unknown_critical_chunk", "no_end", "animation", "header_not_first"])
def test_pngs_that_cannot_be_kept_as_they_are(damage):
    from galleries.ingest.png_stream import png_image_chunks

    data = images.png((400, 400))
    assert png_image_chunks(data) is not None
    if damage == "idat_checksum":
        at = data.index(b"IDAT") + 4
        data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]
    elif damage == "unknown_critical_chunk":
        data = images.png_with_chunk(data, images.png_chunk(b"ABCD", b"x"))
    elif damage == "no_end":
        data = data[:-12]
    elif damage == "animation":
        data = images.png_with_chunk(data, images.png_chunk(b"acTL", bytes(8)))
    else:
        data = data[:8] + images.png_chunk(b"tEXt", b"a\x00b") + data[8:]
    assert png_image_chunks(data) is None


def test_unknown_ancillary_chunks_are_dropped():
    from galleries.ingest.png_stream import png_image_chunks

    data = images.png_with_chunk(images.png((400, 400)), images.png_chunk(b"prVt", b"private data"))
    assert b"private data" not in png_image_chunks(data)


def test_an_upright_exif_is_dropped_without_encoding_again(monkeypatch):
    from galleries.ingest import pillow

    monkeypatch.setattr(pillow, "encode", lambda image, fmt: pytest.fail("encoded again"))
    clean, width, height = process_raster(images.png_with_exif_orientation((600, 400), orientation=1), "png")
    assert (width, height) == (600, 400) and b"eXIf" not in clean


def scan_flood(scans: int = 3000) -> bytes:
    """A valid progressive JPEG whose last scan is repeated thousands of times: tens of
    kilobytes that libjpeg walks the whole image for, scan after scan."""
    out = io.BytesIO()
    Image.new("RGB", (2048, 2048), (90, 90, 90)).save(out, "JPEG", progressive=True, quality=50)
    data = out.getvalue()
    last_scan = data.rindex(b"\xff\xda")
    return data[:-2] + data[last_scan:-2] * scans + b"\xff\xd9"


def test_a_jpeg_scan_flood_is_refused_before_it_is_decoded(monkeypatch, figures):
    from galleries.ingest.raster import MAX_JPEG_SCANS, jpeg_scans

    data = scan_flood()
    assert jpeg_scans(data) > MAX_JPEG_SCANS
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("decoded a scan flood"))
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: pytest.fail("decoded a scan flood"))
    with pytest.raises(ImageRejected) as refused:
        process_raster(data, "jpeg", "workspace_paths[0]")
    assert refused.value.code == "image_too_complex" and refused.value.http_status == 422
    figures.add("decode_bound_trips")


def test_an_ordinary_progressive_jpeg_is_within_the_scan_limit():
    out = io.BytesIO()
    Image.new("RGB", (640, 480), (10, 200, 30)).save(out, "JPEG", progressive=True)
    from galleries.ingest.raster import jpeg_scans

    assert 1 < jpeg_scans(out.getvalue()) <= 12
    assert process_raster(out.getvalue(), "jpeg")[1:] == (640, 480)


def test_the_scan_count_skips_marker_bytes_inside_headers_and_entropy_data():
    from galleries.ingest.raster import jpeg_scans

    out = io.BytesIO()
    # Noise gives entropy-coded data full of stuffed 0xFF 0x00 pairs; EXIF text holds FF DA.
    Image.effect_noise((400, 400), 80).convert("RGB").save(out, "JPEG", exif=b"Exif\x00\x00" + b"\xff\xda" * 50)
    assert jpeg_scans(out.getvalue()) == 1


@pytest.mark.parametrize("entropy, scans", [
    (b"\x12\xff\x00\x34\xff\xd3\x56", 1),  # stuffing and a restart are data; the end follows
    (b"\x12\xff\xff\xff\x00", None),  # fill bytes then stuffing: no marker, so no end
    (b"\x12\xff", None),  # cut after an 0xFF
])
def test_the_scan_count_reads_entropy_coded_data_to_its_next_marker(entropy, scans):
    from galleries.ingest.raster import jpeg_scans

    sos = b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00"  # a scan header of one component
    data = b"\xff\xd8" + sos + entropy
    if scans is not None:
        data += b"\xff\xff\xd9"  # a fill byte before the end marker
    assert jpeg_scans(data) == scans
    assert jpeg_scans(b"\xff\xd8" + sos + b"\x01\xff\x00" + sos + b"\x02\xff\xd9") == 2


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_colour_conversion_in_place_gives_the_pixels_a_copy_would(mode):
    from PIL import ImageCms

    from galleries.ingest.colour import SRGB as _SRGB
    from galleries.ingest.colour import to_srgb as _to_srgb


    icc = images.p3_profile()  # an sRGB profile's transform is skipped: it changes nothing
    image = Image.frombytes(mode, (64, 64), bytes(range(256)) * (64 * 64 * len(mode) // 256))
    image.info["icc_profile"] = icc
    expected = ImageCms.profileToProfile(image, ImageCms.ImageCmsProfile(io.BytesIO(icc)), _SRGB, outputMode=mode)
    converted = _to_srgb(image, None)
    assert converted is image  # no second full-size image
    assert converted.tobytes() == expected.tobytes()


def _quadrants(size=(480, 360)) -> Image.Image:
    """Four flat quadrants of distinct colours: where each lands says how an image was turned."""
    image = Image.new("RGB", size)
    w, h = size
    for (x, y), colour in zip([(0, 0), (1, 0), (0, 1), (1, 1)],
                              [(250, 20, 20), (20, 250, 20), (20, 20, 250), (250, 250, 20)], strict=True):
        image.paste(colour, (x * w // 2, y * h // 2, (x + 1) * w // 2, (y + 1) * h // 2))
    return image


def _centres(image: Image.Image) -> list[tuple[int, ...]]:
    w, h = image.size
    return [image.convert("RGB").getpixel((x * w // 4, y * h // 4)) for y in (1, 3) for x in (1, 3)]


@pytest.mark.parametrize("fmt", ["JPEG", "WEBP"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_photographs_are_turned_as_exif_transpose_turns_them(fmt, orientation):
    """JPEG and WebP go through libvips; each of the eight orientations lands as Pillow's
    exif_transpose would put it."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    _quadrants().save(out, fmt, exif=exif.tobytes(), quality=95)
    clean, width, height = process_raster(out.getvalue(), fmt.lower())
    expected = ImageOps.exif_transpose(Image.open(io.BytesIO(out.getvalue())))
    stored = Image.open(io.BytesIO(clean))
    assert stored.format == fmt and (width, height) == stored.size == expected.size
    assert not stored.getexif() and b"Exif" not in clean
    for got, want in zip(_centres(stored), _centres(expected), strict=True):
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 12, (orientation, got, want)


@pytest.mark.parametrize("fmt", ["JPEG", "WEBP"])
def test_a_truncated_photograph_is_refused_not_filled_in(fmt):
    out = io.BytesIO()
    Image.effect_noise((400, 400), 60).convert("RGB").save(out, fmt, quality=90)
    data = out.getvalue()
    assert code_of(process_raster, data[: len(data) * 2 // 3], fmt.lower()) == "invalid_image"


def test_a_photograph_with_an_unreadable_profile_is_refused():
    out = io.BytesIO()
    _quadrants().save(out, "JPEG", icc_profile=b"not a colour profile" * 20)
    with pytest.raises(ImageRejected) as caught:
        process_raster(out.getvalue(), "jpeg")
    assert caught.value.code == "invalid_image" and "colour profile" in str(caught.value)


def test_a_photograph_profile_is_applied_and_dropped():
    from PIL import ImageCms

    out = io.BytesIO()
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    _quadrants().save(out, "JPEG", icc_profile=icc, quality=95)
    clean, _, _ = process_raster(out.getvalue(), "jpeg")
    stored = Image.open(io.BytesIO(clean))
    assert "icc_profile" not in stored.info
    for got, want in zip(_centres(stored), _centres(_quadrants()), strict=True):
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 12


@pytest.mark.parametrize("fmt", ["JPEG", "WEBP", "PNG"])
def test_libvips_decodes_the_bytes_where_they_are_not_a_copy(monkeypatch, fmt):
    """A loader handed a buffer copies it first, and the copy sat beside the decoded image;
    a memory source reads the caller's bytes."""
    pyvips = vips.libvips()

    def copies(*args, **kwargs):
        raise AssertionError("a buffer loader copies the source")

    for name in ("jpegload_buffer", "webpload_buffer", "pngload_buffer", "new_from_buffer"):
        monkeypatch.setattr(pyvips.Image, name, copies)
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    _quadrants().save(out, fmt, exif=exif.tobytes())
    clean, width, height = process_raster(out.getvalue(), fmt.lower())
    assert (width, height) == Image.open(io.BytesIO(clean)).size == _quadrants().size[::-1]


def test_libvips_keeps_no_decoded_image_after_a_call():
    from galleries.ingest.vips import libvips as _pyvips

    assert _pyvips().cache_get_max() == 0


def test_a_photograph_whose_profile_is_for_another_colour_space_is_refused():
    from PIL import ImageCms

    grey = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    out = io.BytesIO()
    _quadrants().save(out, "JPEG", icc_profile=grey)
    assert code_of(process_raster, out.getvalue(), "jpeg") == "invalid_image"


def _png_moved_after_the_image(data: bytes, kind: bytes) -> bytes:
    """The PNG with its ``kind`` chunks moved after its image data, where the format allows them."""
    import struct
    import zlib

    chunks = images.png_chunks(data)
    moved = [c for c in chunks if c[0] == kind]
    rest = [c for c in chunks if c[0] != kind]
    end = max(i for i, (k, _) in enumerate(rest) if k == b"IDAT") + 1
    ordered = rest[:end] + moved + rest[end:]
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(body)) + k + body + struct.pack(">I", zlib.crc32(k + body)) for k, body in ordered)


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_pngs_are_turned_as_exif_transpose_turns_them(mode, orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    _quadrants().convert(mode).save(out, "PNG", exif=exif.tobytes())
    source = out.getvalue()
    expected = ImageOps.exif_transpose(Image.open(io.BytesIO(source)))
    for data in (source, _png_moved_after_the_image(source, b"eXIf")):
        clean, width, height = process_raster(data, "png")
        stored = Image.open(io.BytesIO(clean))
        assert (width, height) == stored.size == expected.size and not stored.getexif()
        assert stored.convert("RGB").tobytes() == expected.convert("RGB").tobytes(), (mode, orientation)


def test_png_orientation_from_xmp_and_a_raw_exif_profile():
    for data in (images.png_with_xmp_orientation((600, 400), orientation=8),
                 _png_moved_after_the_image(images.png_with_xmp_orientation((600, 400), orientation=8), b"iTXt")):
        assert process_raster(data, "png")[1:] == (400, 600)
    from PIL import PngImagePlugin

    exif = Image.Exif()
    exif[0x0112] = 6
    raw = exif.tobytes()
    info = PngImagePlugin.PngInfo()
    info.add_text("Raw profile type exif", f"\nexif\n{len(raw)}\n{raw.hex()}")
    out = io.BytesIO()
    Image.new("RGB", (600, 400), (10, 200, 10)).save(out, "PNG", pnginfo=info)
    assert process_raster(out.getvalue(), "png")[1:] == (400, 600)


def test_a_16_bit_png_is_left_to_pillow(monkeypatch):
    monkeypatch.setattr(vips, "normalise", lambda *args: pytest.fail("libvips took a 16-bit PNG"))
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    Image.new("I;16", (600, 400), 1000).save(out, "PNG", exif=exif.tobytes())
    assert process_raster(out.getvalue(), "png")[1:] == (400, 600)


@pytest.mark.parametrize("turned", [False, True])
def test_a_png_whose_image_checksum_fails_is_encoded_again_whichever_library_decodes_it(turned):
    """Pillow decodes such a PNG and it is encoded again, never kept; libvips, which decodes the
    turned one, does the same."""
    exif = Image.Exif()
    exif[0x0112] = 6 if turned else 1
    out = io.BytesIO()
    Image.effect_noise((400, 400), 50).convert("RGB").save(out, "PNG", exif=exif.tobytes())
    data = bytearray(out.getvalue())
    at = data.find(b"IDAT")
    data[at + 4 + int.from_bytes(data[at - 4:at], "big")] ^= 0xFF  # the image data's CRC
    clean, _, _ = process_raster(bytes(data), "png")
    from galleries.ingest.png_stream import png_image_chunks

    # What is stored is a PNG whose every checksum holds: written anew, not the source's chunks.
    assert png_image_chunks(clean) is not None and clean != bytes(data)


def _decodes(monkeypatch) -> list[str]:
    """Every pixel decode Pillow makes from here on, by image format."""
    decoded: list[str] = []
    load = ImageFile.ImageFile.load

    def counted(self):
        if self.tile:
            decoded.append(self.format)
        return load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", counted)
    return decoded


@pytest.mark.parametrize("make", [lambda: images.png((400, 400)), images.png_with_metadata,
                                  lambda: images.png_with_exif_orientation((600, 400), orientation=1),
                                  lambda: images.png((400, 400), compress_level=0)])
def test_an_upright_png_is_kept_without_decoding_its_pixels(monkeypatch, make):
    # The stream check proves every scanline; holding the decoded pixels beside the file
    # would double a kept PNG's memory (a 4096² RGBA PNG: 64 MiB of pixels for a 0.1 MiB file).
    source = make()
    decoded = _decodes(monkeypatch)
    facts, clean = image_facts(source), process_raster(source, "png")[0]
    assert decoded == []
    assert facts.sha256 == hashlib.sha256(clean).hexdigest()
    assert Image.open(io.BytesIO(clean)).tobytes() == Image.open(io.BytesIO(source)).tobytes()


def test_a_png_that_fails_the_stream_check_is_decoded_and_proved_before_it_is_encoded(monkeypatch):
    source = images.png((400, 400))
    at = source.index(b"IDAT") + 4  # the image data's checksum fails: not kept
    broken = source[:at] + bytes([source[at] ^ 1]) + source[at + 1:]
    decoded = _decodes(monkeypatch)
    assert code_of(process_raster, broken, "png") == "invalid_image"
    assert decoded == ["PNG"]


def test_metadata_pillow_cannot_read_after_the_image_data_still_refuses_the_png():
    # A zTXt chunk that inflates past Pillow's text limit, placed after the image data: it is
    # read when the orientation is looked for, so the image is decoded in full and refused.
    import zlib

    from PIL import PngImagePlugin

    source = images.png((400, 400))
    bomb = images.png_chunk(b"zTXt", b"Comment\x00\x00" + zlib.compress(b"a" * (PngImagePlugin.MAX_TEXT_CHUNK + 1)))
    data = source[:-12] + bomb + source[-12:]
    assert code_of(process_raster, data, "png") == "invalid_image"


def test_the_decoded_image_is_let_go_before_the_encoded_output_is_joined(monkeypatch):
    import gc

    import pyvips

    alive: list[int] = []
    joined = EncodedOutput.joined

    def spy(self):
        gc.collect()
        alive.append(sum(isinstance(o, pyvips.Image) for o in gc.get_objects()))
        return joined(self)

    monkeypatch.setattr(EncodedOutput, "joined", spy)
    clean, width, height = process_raster(images.jpeg_with_gps_and_orientation(), "jpeg")
    assert alive == [0] and clean.startswith(b"\xff\xd8") and (width, height) != (0, 0)


@pytest.mark.parametrize("make, work", [
    (lambda: images.jpeg_with_gps_and_orientation(), ["normalise_raster"]),
    (lambda: images.svg(), ["sanitise_svg", "normalise_raster"]),
])
def test_decoding_and_encoding_are_offloaded_from_the_serving_thread(make, work, monkeypatch):
    """Under gevent workers, decoding holds no request's thread (arkme.kernel.offload)."""
    from galleries.ingest import process_image as module

    offloaded = []

    def record(work, *args, **kwargs):
        offloaded.append(work)
        return work(*args, **kwargs)

    monkeypatch.setattr(module, "offload", record)
    facts = module.image_facts(make(), "image")
    assert [function.__name__ for function in offloaded] == work
    assert facts.format in {"jpeg", "png"}
