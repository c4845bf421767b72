"""An upload handler that stops reading an attachment as soon as it passes the size limit."""
from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from arkme.errors import PayloadTooLarge


class LimitedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Files stream to a temporary file; none is held whole in memory or read past the limit."""

    def new_file(self, *args, **kwargs):
        self._received = 0
        return super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self._received += len(raw_data)
        limit = settings.ARKME_ATTACHMENT_MAX_BYTES
        if self._received > limit:
            raise PayloadTooLarge(
                f"Each attachment may have at most {limit // (1024 * 1024)} MiB.",
                code="attachment_too_large",
            )
        return super().receive_data_chunk(raw_data, start)
