"""A PNG is kept without re-encoding only when it is exactly its image: every hostile class
of stream, header and chunk order is re-encoded instead, and what is stored decodes with a
second, strict decoder (pypng)."""
from __future__ import annotations

import io
import struct
import zlib

import png as pypng
import pytest

from galleries.ingest import png_stream
from galleries.ingest.png_stream import PNG_SIGNATURE, png_image_chunks
from galleries.ingest.raster import normalise_raster, process_raster

W, H = 400, 320


@pytest.fixture(autouse=True, params=["zlib-ng", "zlib"])
def inflater(request, monkeypatch):
    """Every test here on both inflaters: zlib-ng's (``galleries.ingest.inflate``) and the
    standard module it falls back to."""
    from zlib_ng import zlib_ng

    monkeypatch.setattr(png_stream, "zlib", zlib_ng if request.param == "zlib-ng" else zlib)
    return request.param


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def ihdr(width=W, height=H, depth=8, colour=2, compression=0, filtering=0, interlace=0) -> bytes:
    return chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, compression, filtering, interlace))


def raw_rows(width=W, height=H, filter_byte=0) -> bytes:
    return b"".join(bytes([filter_byte]) + bytes((x * 7 + y) % 256 for x in range(width * 3)) for y in range(height))


def build(*chunks: bytes) -> bytes:
    return PNG_SIGNATURE + b"".join(chunks) + chunk(b"IEND", b"")


def good(stream: bytes | None = None) -> bytes:
    return build(ihdr(), chunk(b"IDAT", stream if stream is not None else zlib.compress(raw_rows())))


def unfinished_stream(data: bytes) -> bytes:
    compressor = zlib.compressobj()
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)  # no final block, no Adler-32


def adam7_png() -> bytes:
    out = io.BytesIO()
    rows = [[(x * 5 + y) % 256 for x in range(W * 3)] for y in range(H)]
    pypng.Writer(W, H, greyscale=False, interlace=True).write(out, rows)
    return out.getvalue()


HOSTILE = {
    "data after the stream in the same IDAT": good(zlib.compress(raw_rows()) + b"hidden payload"),
    "an IDAT after the stream ended": build(ihdr(), chunk(b"IDAT", zlib.compress(raw_rows())),
                                            chunk(b"IDAT", b"hidden payload")),
    "a stream that inflates past the rows": good(zlib.compress(raw_rows() + b"\x00" * 100_000)),
    "a stream without its Adler-32": good(zlib.compress(raw_rows())[:-4]),
    "a stream without its final block": good(unfinished_stream(raw_rows())),
    "a second IHDR": build(ihdr(), ihdr(width=W * 2), chunk(b"IDAT", zlib.compress(raw_rows()))),
    "a second IHDR after the data": build(ihdr(), chunk(b"IDAT", zlib.compress(raw_rows())), ihdr(width=W * 2)),
    "compression method 1": build(ihdr(compression=1), chunk(b"IDAT", zlib.compress(raw_rows()))),
    "filter method 1": build(ihdr(filtering=1), chunk(b"IDAT", zlib.compress(raw_rows()))),
    "interlace method 2": build(ihdr(interlace=2), chunk(b"IDAT", zlib.compress(raw_rows()))),
    "bit depth 3": build(ihdr(depth=3), chunk(b"IDAT", zlib.compress(raw_rows()))),
    "a filter type of 5": good(zlib.compress(raw_rows(filter_byte=5))),
    "IDAT split by another chunk": build(ihdr(), chunk(b"IDAT", zlib.compress(raw_rows())[:100]),
                                         chunk(b"tEXt", b"k\x00v"), chunk(b"IDAT", zlib.compress(raw_rows())[100:])),
    "a palette after the data": build(ihdr(), chunk(b"IDAT", zlib.compress(raw_rows())), chunk(b"PLTE", b"\x00" * 3)),
    "an unknown critical chunk": build(ihdr(), chunk(b"ZZZZ", b"x"), chunk(b"IDAT", zlib.compress(raw_rows()))),
    "a corrupt checksum": good()[:-20] + b"\x00" + good()[-19:],
}


def test_an_exact_image_is_kept_as_its_image_chunks_without_metadata():
    data = build(ihdr(), chunk(b"tEXt", b"GPS\x0048.85,2.35"), chunk(b"IDAT", zlib.compress(raw_rows())))
    kept = png_image_chunks(data)
    assert kept is not None and b"GPS" not in kept and kept == good()


def test_an_exact_adam7_image_is_kept():
    data = adam7_png()
    assert png_image_chunks(data) is not None


def test_an_adam7_stream_one_byte_short_is_not():
    data = adam7_png()
    reader = pypng.Reader(bytes=data)
    chunks = list(reader.chunks())
    stream = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert png_image_chunks(build(chunks_of(chunks)[0], chunk(b"IDAT", zlib.compress(stream[:-1])))) is None
    assert png_image_chunks(build(chunks_of(chunks)[0], chunk(b"IDAT", zlib.compress(stream)))) is not None


def chunks_of(chunks) -> list[bytes]:
    return [chunk(kind, body) for kind, body in chunks if kind not in (b"IDAT", b"IEND")]


@pytest.fixture(params=[png_stream.INFLATE_INPUT, 4096, 7], ids=lambda size: f"input-{size}")
def inflate_input(request, monkeypatch):
    """The stream handed to zlib in pieces of each size: a check must not depend on where the
    pieces (or the IDAT chunks) break the stream."""
    monkeypatch.setattr(png_stream, "INFLATE_INPUT", request.param)
    return request.param


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_png_is_never_kept(name, inflate_input):
    assert png_image_chunks(HOSTILE[name]) is None


def split_idat(stream: bytes, size: int) -> list[bytes]:
    return [chunk(b"IDAT", stream[i:i + size]) for i in range(0, len(stream), size)]


@pytest.mark.parametrize("size", [1, 333, 8192])
def test_a_stream_over_many_idat_chunks_is_kept_as_it_lies(size, inflate_input):
    stream = zlib.compress(raw_rows())
    data = build(ihdr(), *split_idat(stream, size))
    assert png_image_chunks(data) == data


@pytest.mark.parametrize("size", [1, 333, 8192])
def test_data_after_the_stream_in_a_later_idat_chunk_is_refused(size, inflate_input):
    stream = zlib.compress(raw_rows()) + b"hidden payload"
    assert png_image_chunks(build(ihdr(), *split_idat(stream, size))) is None


def test_the_fingerprint_of_a_kept_png_holds_no_second_copy_of_it():
    import hashlib
    import os
    import tracemalloc

    side = 1100
    rows = b"".join(b"\x00" + os.urandom(side * 3) for _ in range(side))  # noise: incompressible
    data = build(ihdr(width=side, height=side), *split_idat(zlib.compress(rows), 65536))
    tracemalloc.start()
    try:
        facts = normalise_raster(data, "png", keep=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert facts.data is None and facts.sha256 == hashlib.sha256(data).hexdigest()
    # The stream check inflates a bounded piece at a time and the kept chunks are hashed where
    # they lie: joining the image data or the kept chunks would each cost the image's size.
    assert peak < len(data) / 2
    assert normalise_raster(data, "png").kept_bytes() == data


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_png_is_reencoded_or_refused_and_what_is_stored_decodes_strictly(name, figures):
    from galleries.ingest.rejection import ImageRejected

    figures.add("hostile_png_classes_tried")
    try:
        clean, width, height = process_raster(HOSTILE[name], "png")
    except ImageRejected as error:
        assert error.http_status == 422 and error.code in {"invalid_image", "image_dimensions"}
        return
    assert b"hidden payload" not in clean and clean != HOSTILE[name]
    reader = pypng.Reader(bytes=clean)
    decoded_width, decoded_height, rows, _ = reader.read()
    assert (decoded_width, decoded_height) == (width, height) == (W, H)
    assert sum(1 for _ in rows) == H


def test_a_png_with_nothing_to_drop_is_its_own_kept_form_not_a_copy():
    from tests.support import images

    plain = images.png((400, 400))
    assert png_image_chunks(plain) is plain  # confirm holds the file once, not twice
    with_metadata = images.png_with_metadata()
    kept = png_image_chunks(with_metadata)
    assert kept is not with_metadata and len(kept) < len(with_metadata)
    trailing = plain + b"after the end"
    assert png_image_chunks(trailing) == plain
