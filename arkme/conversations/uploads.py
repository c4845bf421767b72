"""An upload handler that stops reading an attachment as soon as it passes the size limit."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from arkme.kernel.errors import ErrorCode, PayloadTooLarge
from arkme.kernel.text import size_text


class LimitedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Files stream to a temporary file; none is held whole in memory or read past the limit."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        self._received = 0
        return super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self._received += len(raw_data)
        limit = settings.ARKME_ATTACHMENT_MAX_BYTES
        if self._received > limit:
            raise PayloadTooLarge(
                f"Each attachment may have at most {size_text(limit)}.",
                code=ErrorCode.ATTACHMENT_TOO_LARGE,
            )
        return super().receive_data_chunk(raw_data, start)
