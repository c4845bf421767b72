"""Request bodies sent with chunked transfer coding, made readable to Django.

Django reads a request body by its ``Content-Length`` and takes a request without one to have
no body, so a chunked body (any HTTP/1.1 client may send one; streaming clients do) reached
every view as no body at all: an execute without arguments, an empty message, an MCP message
that is not JSON. gunicorn decodes the chunks and says so with ``wsgi.input_terminated``;
this wrapper spools the decoded body (in memory up to ``DATA_UPLOAD_MAX_MEMORY_SIZE``, in a
temporary file beyond) and states its length, so every view, parser and limit sees the request
exactly as if its length had been declared.

A body longer than the largest request the service takes is cut one byte past that limit, and
Django's own checks then refuse it as they refuse a declared length (``413`` for a JSON body).
A server that does not decode chunks (no ``wsgi.input_terminated``) is left alone.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from typing import IO, Any

from django.conf import settings

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_PART_OVERHEAD = 64 * 1024  # a multipart part's headers and boundary, generously
_READ = 64 * 1024


def request_body_limit(content_type: str) -> int:
    """The most a request body may hold: a message's attachments and fields for multipart,
    the JSON limit for everything else."""
    if content_type.lower().startswith("multipart/"):
        parts = settings.ARKME_MESSAGE_MAX_ATTACHMENTS
        return settings.DATA_UPLOAD_MAX_MEMORY_SIZE + parts * (settings.ARKME_ATTACHMENT_MAX_BYTES + _PART_OVERHEAD)
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def _is_chunked(environ: dict[str, Any]) -> bool:
    return (not environ.get("CONTENT_LENGTH") and bool(environ.get("wsgi.input_terminated"))
            and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower())


def _spool(stream: IO[bytes], limit: int) -> tuple[IO[bytes], int]:
    """The decoded body, up to ``limit + 1`` bytes, rewound, and its length."""
    spool = tempfile.SpooledTemporaryFile(max_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    size = 0
    while size <= limit:
        chunk = stream.read(min(_READ, limit + 1 - size))
        if not chunk:
            break
        spool.write(chunk)
        size += len(chunk)
    spool.seek(0)
    return spool, size


class ChunkedBodies:
    """WSGI middleware: a chunked request body gets its ``Content-Length``."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not _is_chunked(environ):
            return self.app(environ, start_response)
        spool, size = _spool(environ["wsgi.input"], request_body_limit(environ.get("CONTENT_TYPE", "")))
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = spool, str(size)
        try:
            return self.app(environ, start_response)
        finally:
            # Django has read what it needs by the time the view answered.
            spool.close()
