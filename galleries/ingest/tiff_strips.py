"""An uncompressed TIFF made as it is read, a strip at a time: how an image made in pieces by
the caller reaches libvips' encoder (``vips.encode_in_bands``).

libvips has no loader that reads raw pixels from a stream; its TIFF loader reads an
uncompressed TIFF's strips in order, each from where the header says it lies, asking the
stream for each strip only when its encoder needs those rows. So only the strip being read is
made, and the caller may let go of what the strips before were made from.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

# Tags, in the ascending order a TIFF directory lists them.
_WIDTH, _LENGTH, _BITS, _COMPRESSION, _PHOTOMETRIC = 256, 257, 258, 259, 262
_STRIP_OFFSETS, _SAMPLES, _ROWS_PER_STRIP, _STRIP_BYTES, _PLANAR = 273, 277, 278, 279, 284
_SHORT, _LONG = 3, 4


class TiffStrips:
    """The stream of a ``width`` × ``height`` 8-bit image of ``bands`` bands (grey or RGB),
    uncompressed, in strips of ``rows`` rows; ``strip(k)`` gives the bytes of strip ``k``
    (rows ``k × rows`` onwards, band-interleaved) when the reader first reaches it. Read and
    seek as libvips' custom source calls them."""

    def __init__(self, width: int, height: int, bands: int, rows: int, strip: Callable[[int], bytes]) -> None:
        if bands not in (1, 3):
            raise ValueError("a TIFF strip stream is grey or RGB")
        self._strip = strip
        self._strip_size = rows * width * bands
        count = -(-height // rows)
        entries = 10
        bits_at = 8 + 2 + entries * 12 + 4  # the directory follows the 8-byte header
        offsets_at = bits_at + 2 * bands + (bands % 2) * 2  # kept on a 4-byte boundary
        sizes_at = offsets_at + 4 * count
        self._data_at = sizes_at + 4 * count
        offsets = [self._data_at + index * self._strip_size for index in range(count)]
        sizes = [min(self._strip_size, (height - index * rows) * width * bands) for index in range(count)]

        def entry(tag: int, kind: int, values: int, value: bytes) -> bytes:
            return struct.pack("<HHI", tag, kind, values) + value.ljust(4, b"\0")

        def long(value: int) -> bytes:
            return struct.pack("<I", value)

        def short(value: int) -> bytes:
            return struct.pack("<H", value)

        # Arrays of more than one value lie after the directory; a single value lies in its entry.
        directory = [
            entry(_WIDTH, _LONG, 1, long(width)), entry(_LENGTH, _LONG, 1, long(height)),
            entry(_BITS, _SHORT, bands, short(8) if bands == 1 else long(bits_at)),
            entry(_COMPRESSION, _SHORT, 1, short(1)),
            entry(_PHOTOMETRIC, _SHORT, 1, short(2 if bands == 3 else 1)),  # RGB, or black is zero
            entry(_STRIP_OFFSETS, _LONG, count, long(offsets_at if count > 1 else offsets[0])),
            entry(_SAMPLES, _SHORT, 1, short(bands)), entry(_ROWS_PER_STRIP, _LONG, 1, long(rows)),
            entry(_STRIP_BYTES, _LONG, count, long(sizes_at if count > 1 else sizes[0])),
            entry(_PLANAR, _SHORT, 1, short(1)),  # samples of a pixel together
        ]
        head = b"II*\0" + long(8) + short(len(directory)) + b"".join(directory) + long(0)
        head += struct.pack(f"<{bands}H", *[8] * bands).ljust(offsets_at - bits_at, b"\0")
        head += struct.pack(f"<{count}I", *offsets) + struct.pack(f"<{count}I", *sizes)
        self._head = head
        self.length = self._data_at + sum(sizes)
        self._position = 0
        self._current: tuple[int, bytes] | None = None

    def read(self, size: int) -> bytes | memoryview:
        position = self._position
        if position >= self.length or size <= 0:
            return b""
        if position < self._data_at:
            chunk: bytes | memoryview = self._head[position:position + size]
        else:
            index, offset = divmod(position - self._data_at, self._strip_size)
            if self._current is None or self._current[0] != index:
                self._current = None  # the strip before goes before the next is made
                self._current = (index, self._strip(index))
            chunk = memoryview(self._current[1])[offset:offset + size]
        self._position = position + len(chunk)
        return chunk

    def seek(self, offset: int, whence: int) -> int:
        self._position = {0: offset, 1: self._position + offset, 2: self.length + offset}[whence]
        return self._position
