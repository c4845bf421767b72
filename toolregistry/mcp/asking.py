"""The questions a call asks its human (``toolregistry.questions``), asked over MCP as form
elicitations, and the approval page's address (``toolregistry.page_questions``), sent as a
URL-mode one.

- ``2026-07-28``: django-mcpz signs each question's key into ``requestState`` together with the
  client, the session, the tool and the arguments' digest, so an answer counts only for the
  call it was asked for (``ElicitationAsker``).
- ``2025-11-25`` and ``2025-06-18``: the question goes out as an ``elicitation/create`` request
  on the call's own SSE stream, and the call runs again in the same request once the answer
  came back (``StreamAsker``, ``stream.py``). The key never leaves the server.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from django.http import HttpRequest
from django_mcpz.elicitation import Elicitation, InputRequired
from django_mcpz.server import ElicitationDeclinedError, elicit

from arkme.kernel.errors import ApprovalPending, ApprovalRequired

from ..questions import APPROVAL_KEY


class ElicitationAsker:
    """An ``Asker`` (and ``UrlAsker``) for one ``tools/call``: the library's elicitation of the
    request it is running (``elicit`` reads it from there; so does this). ``opens_urls``: the
    client declared URL-mode elicitation in this request's capabilities."""

    def __init__(self, request: HttpRequest, *, urls: dict[str, str] | None = None) -> None:
        self._request = request
        # The URL questions asked in this request, key → address (``None``: the client did
        # not declare URL mode): the library asks in form mode, and the server's ``_result``
        # turns such a question into URL mode.
        self._urls = urls
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

    @property
    def opens_urls(self) -> bool:
        return self._urls is not None

    def ask_url(self, key: str, text: str, url: str) -> bool:
        answer = self._elicitation.answers.get(key)
        if answer is None:
            self._url_question(key, text, url)
        return answer.action == "accept"

    def wait_for_page(self, key: str, text: str, url: str) -> NoReturn:
        # The same question again: the client retries once its human is back from the page.
        self._url_question(key, text, url)

    def _url_question(self, key: str, text: str, url: str) -> NoReturn:
        assert self._urls is not None  # noqa: S101 - asked only of a client that opens URLs
        self._urls[key] = url
        raise InputRequired(key, text, {})


@dataclass(frozen=True)
class Question:
    """A question waiting to be sent on the stream: its key, text and schema."""

    key: str
    text: str
    schema: dict[str, Any]
    # A URL-mode question: the address the human opens; ``page``: no question at all, but the
    # wait for the account's answer on that page.
    url: str | None = None
    page: bool = False


class StreamAsker:
    """An ``Asker`` for one 2025-era ``tools/call`` whose client accepts an SSE stream.

    A question not answered yet is kept as ``pending`` and ends this run of the call (the
    library's ``InputRequired``, which rolls back what the run wrote); the stream sends it,
    waits, records the answer with ``heard`` and runs the call again. A client that answered
    with an error (it does not support elicitation) is not asked again: the call then goes on
    as without a stream (``available`` is False: the approval in ``_meta``, no ``确认``).
    """

    def __init__(self, *, urls: bool = False) -> None:
        self.answers: dict[str, dict[str, Any] | None] = {}
        self.pending: Question | None = None
        self.available = True
        self._urls = urls
        self._expired = False

    @property
    def opens_urls(self) -> bool:
        """URL mode exists from 2025-11-25 on; a client that answered a question with an error
        cannot be asked at all."""
        return self._urls and self.available

    def ask_url(self, key: str, text: str, url: str) -> bool:
        if key in self.answers:
            return self.answers[key] is not None
        if self._expired:
            raise ApprovalRequired(details={"reason": "expired"})
        self.pending = Question(key, text, {}, url=url)
        raise InputRequired(key, text, {})

    def wait_for_page(self, key: str, text: str, url: str) -> NoReturn:
        if self._expired:
            # No answer on the page in time: still pending there; the same call, made again,
            # runs once the account approved.
            raise ApprovalPending(details={"reason": "pending"})
        self.pending = Question(key, text, {}, url=url, page=True)
        raise InputRequired(key, text, {})

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
