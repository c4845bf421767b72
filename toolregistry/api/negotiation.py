"""Content negotiation: DRF's, with the answer for the Accept headers clients send given at once.

DSH and the MCP SDKs send no ``Accept``, ``*/*`` or ``application/json`` (the MCP transport
has its own view): for those DRF's negotiation always picks the first renderer (the first
one that renders JSON, for ``application/json``) with its own media type, after parsing the
header and ordering its media types by precedence on every call. This picks the same one
without the parsing; any other header, or a ``?format=`` override, goes through DRF's own
negotiation, which also answers ``406`` when nothing is acceptable.
"""
from __future__ import annotations

from typing import Any, Iterable

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

_JSON = "application/json"


class ContentNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request: Request, renderers: Iterable[BaseRenderer],
                        format_suffix: str | None = None) -> tuple[BaseRenderer, str]:
        renderers = list(renderers)
        meta = request.META
        if renderers and format_suffix is None and not meta.get("QUERY_STRING"):
            # No header means */*, as DRF reads it; an empty one accepts nothing (406).
            accept, first = meta.get("HTTP_ACCEPT", "*/*"), renderers[0]
            if accept == "*/*" or (accept == _JSON and first.media_type == _JSON):
                return first, str(first.media_type)
        chosen: Any = super().select_renderer(request, renderers, format_suffix)
        return chosen  # type: ignore[no-any-return]
