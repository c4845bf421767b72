"""The questions a call asks its human (``toolregistry.questions``), asked over MCP as form
elicitations.

- ``2026-07-28``: django-mcpz signs each question's key into ``requestState`` together with the
  client, the session, the tool and the arguments' digest, so an answer counts only for the
  call it was asked for (``ElicitationAsker``).
- ``2025-11-25`` and ``2025-06-18``: the question goes out as an ``elicitation/create`` request
  on the call's own SSE stream, and the call runs again in the same request once the answer
  came back (``StreamAsker``, ``stream.py``). The key never leaves the server.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django_mcpz.elicitation import Elicitation, InputRequired
from django_mcpz.server import ElicitationDeclinedError, elicit

from arkme.kernel.errors import ApprovalRequired

from ..questions import APPROVAL_KEY


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


@dataclass(frozen=True)
class Question:
    """A question waiting to be sent on the stream: its key, text and schema."""

    key: str
    text: str
    schema: dict[str, Any]


class StreamAsker:
    """An ``Asker`` for one 2025-era ``tools/call`` whose client accepts an SSE stream.

    A question not answered yet is kept as ``pending`` and ends this run of the call (the
    library's ``InputRequired``, which rolls back what the run wrote); the stream sends it,
    waits, records the answer with ``heard`` and runs the call again. A client that answered
    with an error (it does not support elicitation) is not asked again: the call then goes on
    as without a stream (``available`` is False: the approval in ``_meta``, no ``确认``).
    """

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any] | None] = {}
        self.pending: Question | None = None
        self.available = True
        self._expired = False

    def answered(self, prefix: str) -> list[str]:
        return [key for key in self.answers if key.startswith(prefix)]

    def ask(self, key: str, text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if key in self.answers:
            return self.answers[key]
        if self._expired:
            # Nobody answered in time: an approval is refused as an expired one; the 确认,
            # unanswered, leaves the operation pending (confirm says it is missing).
            if key.startswith(APPROVAL_KEY):
                raise ApprovalRequired(details={"reason": "expired"})
            return None
        self.pending = Question(key, text, schema)
        raise InputRequired(key, text, schema)

    def heard(self, answer: dict[str, Any] | None) -> None:
        """The client's answer to the pending question (None: none came in time)."""
        question, self.pending = self.pending, None
        if question is None:
            return
        if answer is None:
            self._expired = True
        elif "error" in answer:
            self.available = False
        else:
            accepted = answer.get("action") == "accept"
            content = answer.get("content")
            self.answers[question.key] = (content if isinstance(content, dict) else {}) if accepted else None
