"""The questions a call asks its human (``toolregistry.questions``), asked over MCP as form
elicitations: django-mcpz signs each question's key into ``requestState`` together with the
client, the session, the tool and the arguments' digest, so an answer counts only for the
call it was asked for."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django_mcpz.elicitation import Elicitation
from django_mcpz.server import ElicitationDeclinedError, elicit


class ElicitationAsker:
    """An ``Asker`` for one ``tools/call``: the library's elicitation of the request it is
    running (``elicit`` reads it from there; so does this)."""

    def __init__(self, request: HttpRequest) -> None:
        self._request = request
        self._elicitation: Elicitation = request.mcp_elicitation  # type: ignore[attr-defined]

    @property
    def available(self) -> bool:
        """2026-07-28 clients that answer form elicitations; the 2025 revisions, served
        statelessly, cannot be asked (they present an approval in ``_meta``)."""
        return self._elicitation.unavailable is None

    def answered(self, prefix: str) -> list[str]:
        return [key for key in self._elicitation.answers if key.startswith(prefix)]

    def ask(self, key: str, text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return elicit(self._request, text, schema, key=key, expired_message=None)
        except ElicitationDeclinedError:
            return None
