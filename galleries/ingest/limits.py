"""The bounds every image is held to, and the checks that hold it to them.

The stored bound is read here and nowhere else (``fits_stored``), so that a check and an
encoder stopped at the bound never disagree about it.
"""
from __future__ import annotations

from arkme.kernel.errors import ErrorCode
from arkme.kernel.text import size_text

from .rejection import ImageRejected

MAX_SOURCE_BYTES = 5 * 1024 * 1024
MAX_STORED_BYTES = 5 * 1024 * 1024
MIN_SIDE = 320
MAX_SIDE = 4096
MAX_PIXELS = MAX_SIDE * MAX_SIDE


def _wrong_sides(field: str | None) -> ImageRejected:
    return ImageRejected(ErrorCode.IMAGE_DIMENSIONS, f"Each side must be {MIN_SIDE} to {MAX_SIDE} pixels.", field)


def check_source_size(data: bytes, field: str | None) -> None:
    if len(data) > MAX_SOURCE_BYTES:
        raise ImageRejected(ErrorCode.IMAGE_TOO_LARGE, f"An image may have at most {size_text(MAX_SOURCE_BYTES)}.", field)


def check_header_size(width: int, height: int, field: str | None) -> None:
    """Before decoding: the header alone says how much memory the pixels take."""
    if width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
        raise _wrong_sides(field)


def check_sides(width: int, height: int, field: str | None) -> None:
    if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
        raise _wrong_sides(field)


def fits_stored(size: int) -> bool:
    return size <= MAX_STORED_BYTES


def too_large_to_store(field: str | None) -> ImageRejected:
    return ImageRejected(ErrorCode.IMAGE_TOO_LARGE,
                         f"The image would take more than {size_text(MAX_STORED_BYTES)} to store.", field)


def check_stored_size(size: int, field: str | None) -> None:
    if not fits_stored(size):
        raise too_large_to_store(field)
