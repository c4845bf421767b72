"""Proving that a PNG is its image and nothing else, so it may be stored without re-encoding.

A PNG is kept as its image chunks only when, for about the cost of one inflate, it is shown
to hold exactly its pixels: one IHDR, first, with valid fields; at most one PLTE and one tRNS
before the image data, each valid for the image's type (``png_palette``: a palette image's
every index is checked against its palette); one contiguous run of IDAT; a zlib stream
that inflates to exactly the scanlines the header promises (Adam7 passes included), each
starting with a valid filter type, and that ends with its Adler-32 checksum at that very
byte with nothing after it; IEND last. Anything else (data after the stream, a second stream, a stream that inflates past
the rows, a missing checksum or final block, a second header, a bad field, an unknown
critical chunk, animation) returns None and the image is decoded and encoded again.
Ancillary chunks (metadata) are dropped. A decoder stops at the last row; a stricter one
would see what a lenient one skips, so nothing it skips may reach a public gallery.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .inflate import zlib
from .png_palette import PALETTE, IndexRows, palette_entries, transparency_valid

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
INFLATE_CHUNK = 1 << 20
# The compressed input handed to zlib at a time: what it has not consumed comes back as a new
# bytes object, so the whole stream at once would be copied again on every call.
INFLATE_INPUT = 1 << 18
# Bit depths allowed per colour type, and the samples per pixel of each (PNG spec, 11.2.2).
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
_ANIMATION = frozenset({b"acTL", b"fcTL", b"fdAT"})


@dataclass(frozen=True)
class Header:
    width: int
    height: int
    bit_depth: int
    colour_type: int
    interlaced: bool

    def row_bytes(self, width: int) -> int:
        return (width * self.bit_depth * _CHANNELS[self.colour_type] + 7) // 8

    def row_widths(self) -> Iterator[int]:
        """The width in pixels of every scanline in stream order (Adam7 passes included)."""
        passes = _ADAM7 if self.interlaced else ((0, 0, 1, 1),)
        for x0, y0, dx, dy in passes:
            width = (self.width - x0 + dx - 1) // dx if self.width > x0 else 0
            height = (self.height - y0 + dy - 1) // dy if self.height > y0 else 0
            if width and height:
                for _ in range(height):
                    yield width

    def rows(self) -> Iterator[int]:
        """The length of every scanline in stream order, filter byte included."""
        return (1 + self.row_bytes(width) for width in self.row_widths())


def _header(body: bytes) -> Header | None:
    if len(body) != 13:
        return None
    width, height = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
    depth, colour, compression, filtering, interlace = body[8], body[9], body[10], body[11], body[12]
    if not (0 < width < 2**31 and 0 < height < 2**31) or depth not in _DEPTHS.get(colour, ()):
        return None
    if compression != 0 or filtering != 0 or interlace not in (0, 1):
        return None
    return Header(width, height, depth, colour, bool(interlace))


def _chunks(data: bytes, *, image_crc: bool = True) -> Iterator[tuple[bytes, memoryview, memoryview] | None]:
    """(type, whole chunk, body) per chunk up to IEND; None for a truncated or corrupt one.
    ``image_crc=False`` leaves the image data's checksums to whoever decodes it."""
    view = memoryview(data)
    position = len(PNG_SIGNATURE)
    while position + 12 <= len(data):
        length = int.from_bytes(view[position:position + 4], "big")
        end = position + 12 + length
        kind = bytes(view[position + 4:position + 8])
        checked = image_crc or kind != b"IDAT"
        if end > len(data) or (checked and zlib.crc32(view[position + 4:end - 4])
                               != int.from_bytes(view[end - 4:end], "big")):
            yield None
            return
        yield kind, view[position:end], view[position + 8:end - 4]
        if kind == b"IEND":
            return
        position = end
    yield None


def stream_is_exactly_the_image(header: Header, stream: Iterable[bytes | memoryview],
                                palette: int | None = None) -> bool:
    """Inflate in bounded pieces: the output is exactly the promised scanlines, every filter
    type valid, and the stream ends (checksum verified) with nothing after it. ``stream`` is
    the zlib stream in parts (the IDAT bodies, as they lie in the file), never joined.
    ``palette``: a palette image's number of entries, every index checked against it."""
    indices = None
    if palette is not None and palette < 1 << header.bit_depth:  # a full palette names every index
        indices = IndexRows(header.row_widths(), header.bit_depth, palette)
    rows = header.rows()
    next_row = 0  # offset in the output where the next scanline starts
    expected = sum(header.rows())
    produced = 0
    inflater = zlib.decompressobj()
    try:
        for part in stream:
            view = memoryview(part)
            for start in range(0, len(view), INFLATE_INPUT):
                pending: bytes | memoryview = view[start:start + INFLATE_INPUT]
                while pending:
                    piece = inflater.decompress(pending, INFLATE_CHUNK)
                    pending = inflater.unconsumed_tail
                    if produced + len(piece) > expected:
                        return False  # inflates past the rows: a bomb for a stricter decoder
                    while next_row < produced + len(piece):
                        if piece[next_row - produced] > 4:
                            return False  # filter types are 0 to 4
                        next_row += next(rows)
                    if indices is not None and not indices.feed(piece):
                        return False  # an index past the palette, or a row not checked
                    produced += len(piece)
    except zlib.error:
        return False  # a bad checksum or a corrupt stream
    return produced == expected and inflater.eof and not inflater.unused_data


def png_image_parts(data: bytes) -> list[memoryview] | None:
    """The PNG with only its image chunks, once proven to be exactly its image, as views into
    ``data`` in file order (their concatenation is the PNG to store); else None. A caller that
    needs only the fingerprint hashes the views and never holds a second copy of the image."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    kept: list[memoryview] = [memoryview(PNG_SIGNATURE)]
    header: Header | None = None
    idat: list[memoryview] = []
    seen: set[bytes] = set()
    idat_ended = False
    entries: int | None = None
    for chunk in _chunks(data):
        if chunk is None:
            return None
        kind, whole, body = chunk
        if header is None:
            if kind != b"IHDR" or (header := _header(bytes(body))) is None:
                return None
        elif kind in (b"IHDR", b"PLTE", b"tRNS") and kind in seen:
            return None  # a second header, palette or transparency
        elif kind in (b"PLTE", b"tRNS") and idat:
            return None  # they come before the image data
        elif kind == b"PLTE":
            if (entries := palette_entries(body, header.colour_type, header.bit_depth)) is None:
                return None  # a palette in a grey or truecolour image, or one of a bad length
        elif kind == b"tRNS":
            if not transparency_valid(body, header.colour_type, header.bit_depth, entries):
                return None  # the palette's opacities come after it
        elif kind == b"IDAT":
            if idat_ended:
                return None  # a second run of image data
            idat.append(body)
        elif kind in _ANIMATION or (not kind[0] & 0x20 and kind != b"IEND"):
            return None  # animation, or a critical chunk this code does not know
        if idat and kind != b"IDAT":
            idat_ended = True
        seen.add(kind)
        if kind in (b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND"):
            kept.append(whole)
        if kind == b"IEND":
            break
    if header is None or not idat or b"IEND" not in seen or (header.colour_type == PALETTE and entries is None):
        return None
    if not stream_is_exactly_the_image(header, idat, entries):
        return None
    return kept


def joined_parts(parts: list[memoryview], data: bytes) -> bytes:
    """The kept PNG in one piece. A PNG with nothing to drop is its own kept form: ``data``
    itself, rather than a copy of it beside it."""
    if isinstance(data, bytes) and sum(len(part) for part in parts) == len(data):
        return data  # the parts are disjoint and in file order, so they are all of it
    return b"".join(parts)


def png_image_chunks(data: bytes) -> bytes | None:
    """The PNG with only its image chunks, once proven to be exactly its image; else None."""
    parts = png_image_parts(data)
    return None if parts is None else joined_parts(parts, data)


_EMPTY_IDAT = b"\x00\x00\x00\x00IDAT" + zlib.crc32(b"IDAT").to_bytes(4, "big")
_IEND = b"\x00\x00\x00\x00IEND" + zlib.crc32(b"IEND").to_bytes(4, "big")


def png_metadata_only(data: bytes) -> bytes | None:
    """The PNG's header and every other chunk but its image data, in their order, before an
    empty image: what a reader needs to interpret its metadata (an EXIF orientation may follow
    the image data) without decoding a pixel. None when a chunk is truncated or corrupt."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    kept: list[bytes | memoryview] = [PNG_SIGNATURE]
    # The image data is skipped, not checked: its decoder checks it (Pillow or libvips).
    for chunk in _chunks(data, image_crc=False):
        if chunk is None:
            return None
        kind, whole, _ = chunk
        if kind == b"IEND":
            return b"".join([*kept, _EMPTY_IDAT, _IEND])
        if kind != b"IDAT":
            kept.append(whole)
    return None
