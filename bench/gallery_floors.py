"""The least work a gallery add can do under the contract, written with the libraries alone.

A prepare must fingerprint each source and know the exact bytes it would store (their
fingerprint says whether the gallery has them already). A confirm must read every source
again and check it is unchanged, then store the bytes; prepare may write nothing but the
pending operation, so confirm derives the bytes a second time, except for a PNG kept as its
image chunks, where the stream check alone reproduces them. The floor therefore does, per
image and per path:

- ``kept``: read, sha256, the PNG stream check (it inflates every scanline and checks its
  filter type and the stream's checksum, so the pixels are not decoded besides), sha256 of
  the kept chunks; at confirm, read, sha256, the stream check, sha256, one durable write;
- ``encoded``: read, sha256, decode, turn, colour-convert, encode, sha256; at confirm the
  same again and one durable write (with libvips, as the product does);
- ``svg``: read, sha256, the restricted-SVG check, render with bare cairosvg, the ``kept``
  work on the rendered PNG and one durable write of it to a staging folder (the add renders
  once); at confirm, read, sha256, read the staged render, sha256 (its content address is
  checked, not trusted), and link it into place.

The stream check and the SVG check are the product's own functions: they are required work
(refusing hostile input), so the floor runs them as they are. ``tests/bench`` checks that the
floor stores byte for byte what the product stores.
"""
from __future__ import annotations

import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PIL import Image

if TYPE_CHECKING:
    from .gallery_books import Books


def _encode(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.info = {}
    if fmt == "JPEG":
        image.save(out, "JPEG", quality=90, optimize=False)
    elif fmt == "WEBP":
        image.save(out, "WEBP", quality=90, method=4)
    else:
        image.save(out, "PNG", compress_level=6)
    return out.getvalue()


def _vips(data: bytes, fmt: str) -> bytes:
    import pyvips

    image = pyvips.Image.new_from_buffer(data, "", fail_on="truncated")
    turned = bool(image.get_typeof("orientation")) and image.get("orientation") in range(2, 9)
    # Upright, it streams from decoder to encoder; a turn reads out of order.
    image = image.autorot() if turned else pyvips.Image.new_from_buffer(data, "", access="sequential",
                                                                          fail_on="truncated")
    if image.get_typeof("icc-profile-data"):
        image = image.icc_transform("srgb", embedded=True, intent="perceptual")
    if fmt == "JPEG":
        return bytes(image.jpegsave_buffer(Q=90, subsample_mode="on", optimize_coding=False, keep="none"))
    if fmt == "WEBP":
        return bytes(image.webpsave_buffer(Q=90, effort=4, keep="none"))
    return bytes(image.pngsave_buffer(compression=6, filter="all", keep="none"))


def _png_needs_encoding(data: bytes) -> bool:
    """Turned or carrying a profile, from libvips' reading of the header alone."""
    import pyvips

    header = pyvips.Image.new_from_buffer(data, "")
    turned = bool(header.get_typeof("orientation")) and header.get("orientation") in range(2, 9)
    return turned or bool(header.get_typeof("icc-profile-data"))


def _is_svg(data: bytes) -> bool:
    # Every raster format starts with its binary signature; only the head is looked at, never
    # a copy of the whole source.
    return data[:1024].lstrip()[:1] == b"<"


def _derived_parts(data: bytes) -> list[bytes] | list[memoryview]:
    """The bytes a gallery stores for ``data``, by the shortest route: a kept PNG as views of
    its image chunks in the source (prepare hashes them where they lie, as the product does),
    anything else as the one encoding."""
    import cairosvg

    from galleries.ingest.png_stream import png_image_parts
    from galleries.ingest.svg_sanitise import sanitise_svg

    if _is_svg(data):
        safe = sanitise_svg(data)
        data = cairosvg.svg2png(bytestring=safe.data, output_width=safe.width, output_height=safe.height)
    image = Image.open(io.BytesIO(data))
    if image.format in ("JPEG", "WEBP") or (image.format == "PNG" and _png_needs_encoding(data)):
        return [_vips(data, image.format)]
    kept = png_image_parts(data)  # the stream check inflates every scanline: no decode besides
    if kept is not None:
        return kept
    image.load()
    return [_encode(image, image.format or "PNG")]


def derive(data: bytes) -> bytes:
    """The bytes a gallery stores for ``data``: the product's output, by the shortest route."""
    return b"".join(_derived_parts(data))


def fingerprint(data: bytes) -> str:
    """sha256 of ``derive(data)`` without holding a kept PNG's chunks a second time."""
    digest = hashlib.sha256()
    for part in _derived_parts(data):
        digest.update(part)
    return digest.hexdigest()


def reproduce(data: bytes, stored_sha: str) -> bytes:
    """What confirm derives from unchanged bytes: a PNG prepare kept needs only the stream
    check (its chunks have the fingerprint prepare found); anything else is derived again."""
    from galleries.ingest.png_stream import png_image_chunks

    kept = png_image_chunks(data) if data.startswith(b"\x89PNG") else None
    if kept is not None and hashlib.sha256(kept).hexdigest() == stored_sha:
        return kept
    return derive(data)


def durable_write(directory: Path, data: bytes) -> None:
    """Write, fsync and link into its content address: one durable, atomic write."""
    digest = hashlib.sha256(data).hexdigest()
    fd, temporary = tempfile.mkstemp(dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, directory / digest)
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)


def staging(store: Path) -> Path:
    """Where prepare keeps an SVG's render for confirm: beside the store."""
    folder = store.with_name(f"{store.name}.staging")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# What prepare learns of each image: (source sha256, stored sha256, width, height, format, size).
Prepared = tuple[str, str, int, int, str, int]


def _facts(parts: list[bytes] | list[memoryview]) -> tuple[int, int, str, int]:
    """Width, height, format and size of the stored bytes, from their header alone."""
    head = b"".join(bytes(part[:4096]) for part in parts[:2])
    size = sum(len(part) for part in parts)
    if head.startswith(b"\x89PNG"):  # its IHDR: the signature, the chunk's length and type, then both sides
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big"), "png", size
    with Image.open(io.BytesIO(b"".join(parts))) as image:  # one encoding, opened by its header
        width, height = image.size
        fmt = str(image.format).lower()
    return width, height, fmt, size


def prepare(paths: list[Path], store: Path) -> list[Prepared]:
    """What prepare learns of each source, one in memory at a time; an SVG's render is staged
    for confirm."""
    prepared: list[Prepared] = []
    for path in paths:
        data = path.read_bytes()
        parts = _derived_parts(data)
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        if _is_svg(data):
            durable_write(staging(store), b"".join(parts))
        prepared.append((hashlib.sha256(data).hexdigest(), digest.hexdigest(), *_facts(parts)))
    return prepared


def confirm(paths: list[Path], prepared: list[Prepared], store: Path) -> None:
    placed: set[str] = set()
    for path, (source_sha, stored_sha, *_) in zip(paths, prepared, strict=True):
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != source_sha:
            raise ValueError("changed")
        if _is_svg(data):
            if stored_sha in placed:  # the same image twice in one add: stored once
                continue
            placed.add(stored_sha)
            staged = staging(store) / stored_sha
            if hashlib.sha256(staged.read_bytes()).hexdigest() != stored_sha:
                raise ValueError("damaged")
            try:
                os.link(staged, store / stored_sha)
            except FileExistsError:
                pass
            staged.unlink()
            continue
        stored = reproduce(data, stored_sha)
        if hashlib.sha256(stored).hexdigest() != stored_sha:
            raise ValueError("changed")
        durable_write(store, stored)


def add(paths: list[Path], store: Path, books: Books, say_confirmed: Callable[[], None]) -> None:
    """A whole add: prepare with its operation written, the human's 确认, then confirm."""
    prepared = prepare(paths, store)
    operation = books.prepare([(p[0], p[1]) for p in prepared], [(p[2], p[3], p[4]) for p in prepared])
    say_confirmed()
    confirm(paths, prepared, store)
    books.confirm(operation, [(p[1], p[5], p[2], p[3], p[4]) for p in prepared])
