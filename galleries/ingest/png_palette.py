"""A palette PNG's own chunks, proven to be pixel data and nothing else, so it may be kept.

A palette image (colour type 3) is its palette (PLTE) and, optionally, each entry's opacity
(tRNS), both before the image data; each pixel is an index into the palette. A palette
holds at most 2^bit depth entries (and 256), its opacities at most as many as it has; an
index past the palette is an error a lenient decoder may show as black and a strict one
refuses, so every index of a kept image is checked, row by row, as the stream inflates.
A grey or truecolour image's tRNS is the one sample value shown transparent, of its bit
depth. Anything else (a palette in a grey image, a suggested palette in a truecolour one,
opacities for an image with alpha) is not kept and the image is encoded again.

One that must be turned or colour-converted is written again from its decoded indices, at its
bit depth, with its palette (converted) and opacities: ``write_palette_png``, which turns it a
strip at a time instead of making a turned copy of the whole image.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

from PIL import Image

from .inflate import zlib

PALETTE = 3
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def palette_entries(body: bytes | memoryview, colour_type: int, bit_depth: int) -> int | None:
    """The number of entries of a valid PLTE for this image; None when it may not be kept."""
    entries, remainder = divmod(len(body), 3)
    if colour_type != PALETTE or remainder or not 0 < entries <= min(256, 1 << bit_depth):
        return None
    return entries


def transparency_valid(body: bytes | memoryview, colour_type: int, bit_depth: int, entries: int | None) -> bool:
    """Whether a tRNS chunk is the transparency this image's type allows (PNG spec, 11.3.2.1)."""
    if colour_type == PALETTE:
        return entries is not None and 0 < len(body) <= entries
    samples = {0: 1, 2: 3}.get(colour_type)
    if samples is None or len(body) != 2 * samples:
        return False  # an image with an alpha channel has no tRNS
    return all(int.from_bytes(body[i:i + 2], "big") < (1 << bit_depth) for i in range(0, len(body), 2))


@functools.cache
def _bad_bytes(bit_depth: int, entries: int, pixels: int) -> bytes:
    """Every byte value holding, in its first ``pixels`` packed indices, one past ``entries``."""
    per_byte = 8 // bit_depth
    mask = (1 << bit_depth) - 1
    bad = bytearray()
    for value in range(256):
        indices = [(value >> (8 - bit_depth * (k + 1))) & mask for k in range(per_byte)]
        if any(index >= entries for index in indices[:pixels]):
            bad.append(value)
    return bytes(bad)


class IndexRows:
    """Checks the inflated scanlines of a palette image as they come: each unfiltered (filter
    type 0, what libpng and Pillow write for palettes) and every index within the palette. A
    filtered row would have to be reconstructed to read its indices; it is refused instead,
    and the image is encoded again."""

    def __init__(self, widths: Iterator[int], bit_depth: int, entries: int) -> None:
        self._widths = widths
        self._depth = bit_depth
        self._entries = entries
        self._pending = bytearray()
        self._start = 0
        self._row: tuple[int, bytes, bytes] | None = self._next()

    def _next(self) -> tuple[int, bytes, bytes] | None:
        width = next(self._widths, None)
        if width is None:
            return None
        per_byte = 8 // self._depth
        whole, partial = divmod(width, per_byte)
        # The delete tables for whole bytes and for the last byte's leading pixels (the rest
        # of it is padding, which decoders ignore).
        return (1 + whole + (1 if partial else 0), _bad_bytes(self._depth, self._entries, per_byte),
                _bad_bytes(self._depth, self._entries, partial) if partial else b"")

    def feed(self, piece: bytes | memoryview) -> bool:
        pending = self._pending
        pending += piece
        start = 0
        while self._row is not None and len(pending) - start >= self._row[0]:
            length, bad, bad_last = self._row
            row = pending[start:start + length]
            if row[0] != 0:
                return False
            pixels = row[1:-1] if bad_last else row[1:]
            if len(pixels.translate(None, bad)) != len(pixels):
                return False
            if bad_last and row[-1:].translate(None, bad_last) != row[-1:]:
                return False
            start += length
            self._row = self._next()
        del pending[:start]
        return True


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc: int = zlib.crc32(kind + body)
    return len(body).to_bytes(4, "big") + kind + body + crc.to_bytes(4, "big")


# Rows of the stored image a strip at a time: what is in memory beside the decoded image.
STRIP_ROWS = 16
IDAT_BYTES = 1 << 16


def _source_box(method: Image.Transpose | None, size: tuple[int, int], top: int, bottom: int) -> tuple[int, int, int, int]:
    """The part of the source whose turn (``method``, as ``ImageOps.exif_transpose`` turns it)
    is rows ``top`` to ``bottom`` of the turned image."""
    width, height = size
    if method in (Image.Transpose.TRANSPOSE, Image.Transpose.ROTATE_270):  # its rows are the source's columns
        return top, 0, bottom, height
    if method in (Image.Transpose.TRANSVERSE, Image.Transpose.ROTATE_90):  # the same, from the right
        return width - bottom, 0, width - top, height
    if method in (Image.Transpose.ROTATE_180, Image.Transpose.FLIP_TOP_BOTTOM):  # its rows are the source's, from the bottom
        return 0, height - bottom, width, height - top
    return 0, top, width, bottom  # upright, or mirrored left to right


def write_palette_png(image: Image.Image, method: Image.Transpose | None, bit_depth: int, palette: bytes,
                      transparency: bytes | None, write: Callable[[bytes], int]) -> tuple[int, int]:
    """Write the decoded palette image, turned by ``method``, as a palette PNG of ``bit_depth``
    with this palette and these opacities, unfiltered (as Pillow writes a palette) at zlib
    level 6, a chunk at a time; the turned image is made a strip of rows at a time from the
    source's matching band, never whole beside the decoded one. Returns its size; stops when
    ``write`` refuses a chunk (returns a negative number)."""
    width, height = image.size
    if method in (Image.Transpose.TRANSPOSE, Image.Transpose.TRANSVERSE,
                  Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_270):
        width, height = height, width
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes((bit_depth, PALETTE, 0, 0, 0))
    if write(PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"PLTE", palette)
             + (_chunk(b"tRNS", transparency) if transparency else b"")) < 0:
        return width, height
    packing = "P" if bit_depth == 8 else f"P;{bit_depth}"
    row_bytes = (width * bit_depth + 7) // 8
    deflate = zlib.compressobj(6)
    pending = bytearray()
    for top in range(0, height, STRIP_ROWS):
        bottom = min(top + STRIP_ROWS, height)
        strip = image.crop(_source_box(method, image.size, top, bottom))
        if method is not None:
            strip = strip.transpose(method)
        packed = strip.tobytes("raw", packing)
        del strip
        # Each row after its filter type, 0 (none).
        rows = b"".join(b"\x00" + packed[start:start + row_bytes] for start in range(0, len(packed), row_bytes))
        pending += deflate.compress(rows)
        if len(pending) >= IDAT_BYTES:
            if write(_chunk(b"IDAT", bytes(pending))) < 0:
                return width, height
            pending.clear()
    pending += deflate.flush()
    if write(_chunk(b"IDAT", bytes(pending))) >= 0:
        write(_chunk(b"IEND", b""))
    return width, height
