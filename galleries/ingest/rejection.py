"""The refusal every step of image ingestion raises."""
from __future__ import annotations

from arkme.kernel.errors import ContentRejected, ErrorCode


class ImageRejected(ContentRejected):
    """422 with a stable code, naming the argument the image came from."""

    def __init__(self, code: ErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message, code=code, details={"fields": [field]} if field else None)


def undecodable(field: str | None) -> ImageRejected:
    return ImageRejected(ErrorCode.INVALID_IMAGE, "The image could not be decoded.", field)


def unreadable_profile(field: str | None) -> ImageRejected:
    return ImageRejected(ErrorCode.INVALID_IMAGE, "The image's colour profile cannot be read.", field)
