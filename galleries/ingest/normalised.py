"""What normalising a raster yields: the stored bytes' fingerprint and dimensions, and the bytes
themselves when the caller keeps them; and the output an encoder writes them into."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .limits import check_stored_size, fits_stored
from .png_stream import joined_parts


@dataclass(frozen=True)
class Normalised:
    """A normalised image: the fingerprint and dimensions of the bytes to store, and those bytes
    when the caller keeps them (``None`` when it asked only for the fingerprint)."""

    data: bytes | None
    sha256: str
    width: int
    height: int

    def kept_bytes(self) -> bytes:
        if self.data is None:
            raise ValueError("only the fingerprint was asked for; the bytes were not kept")
        return self.data


class EncodedOutput:
    """Where an encoder writes, a chunk at a time: each chunk goes into the fingerprint and the
    size as it comes, and is kept only when the caller needs the bytes. Encoding into a memory
    buffer instead held the output up to three times over (the growing buffer, its copy and
    Python's) at the moment the decoded image was largest in memory."""

    def __init__(self, keep: bool) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        # Chunks, not a growing buffer: growing one copies what it holds each time it moves.
        self.kept: list[bytes] | None = [] if keep else None

    def write(self, chunk: Any) -> int:
        self.size += len(chunk)
        if not fits_stored(self.size):
            return -1  # the encoder stops; the caller reports the size
        self.digest.update(chunk)
        if self.kept is not None:
            self.kept.append(bytes(chunk))  # libvips reuses its buffer after the call
        return len(chunk)

    def joined(self) -> bytes | None:
        """The output in one piece, the chunks let go."""
        if self.kept is None:
            return None
        data, self.kept = b"".join(self.kept), None
        return data

    def normalised(self, width: int, height: int) -> Normalised:
        """The output as the normalised image: the caller lets its decoded image go first, so
        that the two copies of the output that joining makes for a moment never sit beside it."""
        return Normalised(data=self.joined(), sha256=self.digest.hexdigest(), width=width, height=height)


def encoded_whole(clean: bytes, width: int, height: int, field: str | None, keep: bool) -> Normalised:
    """An image an encoder wrote into memory in one piece."""
    check_stored_size(len(clean), field)
    return Normalised(data=clean if keep else None, sha256=hashlib.sha256(clean).hexdigest(), width=width, height=height)


def kept_png(parts: list[memoryview], source: bytes, width: int, height: int, field: str | None,
             keep: bool) -> Normalised:
    """A PNG kept as its image chunks: fingerprinted from the views into its source, and
    joined into bytes only for a caller that stores them."""
    check_stored_size(sum(len(part) for part in parts), field)
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return Normalised(data=joined_parts(parts, source) if keep else None, sha256=digest.hexdigest(),
                      width=width, height=height)
