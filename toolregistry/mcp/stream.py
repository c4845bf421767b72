"""2025-era ``tools/call`` that ask the human: the answer as an SSE stream.

The 2025 revisions let a server answer a POSTed request with an SSE stream and send requests
of its own on it. When a call of such a client needs the human (an approval, the ``确认``) and
the client accepts ``text/event-stream``, the response is a stream: one ``elicitation/create``
request (form mode), then, once the client POSTed its answer to the endpoint (any web
process: ``answers.py``), the call runs again with it and its result is the final event.

The stream holds no database connection while it waits: the request's connection goes back
before the first event, and each later step takes one only as long as it runs. A comment line
every ``ARKME_MCP_HEARTBEAT_SECONDS`` is how a client that left is noticed: its write fails
(or its socket reads closed), and the wait ends there. No event carries an id, so a client
never tries to resume the stream (the endpoint has no GET).

Which clients are asked: the 2025 SDKs declare the ``elicitation`` capability only at
``initialize``, and the server, stateless, does not see it again on a call. So every client
that accepts SSE is asked; one that does not support elicitation answers with a JSON-RPC
error (the official SDKs do), and the call then goes on as without a stream: the approval in
``_meta``, or ``approval_required``; ``confirmation_required``.
"""
from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from arkme.kernel.budget import budget_renewed
from arkme.kernel.cancellation import caller_gone
from arkme.kernel.outages import DATABASE_ERRORS

from ..page_questions import elicitation_id, page_decided
from .answers import Asked, answer_delivered, answer_wait, question_opened
from .asking import Question, StreamAsker
from .exchange import Exchange

logger = logging.getLogger(__name__)

# A call that asks again after an answer (its card changed meanwhile) is asked at most this often.
MAX_QUESTIONS = 3
# How often the wait for an answer on the approval page reads the approval.
PAGE_POLL_SECONDS = 1.0
_STORE_ERRORS: tuple[type[BaseException], ...] = (*DATABASE_ERRORS, OSError)
try:  # redis-py's errors are not OSErrors
    from redis.exceptions import RedisError

    _STORE_ERRORS = (*_STORE_ERRORS, RedisError)
except ImportError:  # pragma: no cover - redis is a dependency
    pass


def accepts_stream(request: HttpRequest) -> bool:
    """Whether the client takes an SSE stream as the answer to its POST."""
    return "text/event-stream" in request.headers.get("Accept", "")


def answer_message(message: dict[str, Any]) -> bool:
    """Whether a posted JSON-RPC message is a response (the answer to a question), not a
    request or a notification."""
    return "method" not in message and ("result" in message or "error" in message)


def answer_received(exchange: Exchange, message: dict[str, Any]) -> bool:
    """Deliver a client's answer to the question it names: False when no question with that id
    waits for this client in this session (never asked, answered already, expired)."""
    question_id = message.get("id")
    answer = _answer_of(message)
    if not isinstance(question_id, str) or answer is None:
        return False
    return answer_delivered(question_id, _asked(exchange), answer)


def _answer_of(message: dict[str, Any]) -> dict[str, Any] | None:
    """What is kept of an answer: an error (the client cannot be asked), or the action and the
    form's content; None for anything else."""
    if "error" in message:
        return {"error": True}
    result = message.get("result")
    if not isinstance(result, dict) or result.get("action") not in ("accept", "decline", "cancel"):
        return None
    content = result.get("content")
    return {"action": result["action"], "content": content if isinstance(content, dict) else None}


def _asked(exchange: Exchange) -> Asked:
    return Asked(client_id=exchange.client.pk, session_id=exchange.session.pk)


def streamed_call(request: HttpRequest, exchange: Exchange, asker: StreamAsker,
                  run: Callable[[], HttpResponse]) -> HttpResponseBase:
    """The answer to a call whose run stopped on ``asker.pending``: an SSE stream asking it and
    ending with the call's result. ``run`` runs the call again (as the door runs it)."""
    wait_seconds = min(settings.ARKME_MCP_ANSWER_WAIT_SECONDS, settings.ARKME_APPROVAL_TTL_SECONDS)
    try:
        question_id = question_opened(_asked(exchange), ttl_seconds=wait_seconds)
    except _STORE_ERRORS as exc:
        # Nowhere to hear the answer from: the call goes on as for a client that cannot be asked.
        logger.warning("an MCP question could not be asked: %s", type(exc).__name__)
        asker.heard({"error": True})
        return run()
    # The stream's body runs after the view returned: it runs in the view's context (the
    # exchange, the client's socket, the request id), copied now.
    context = contextvars.copy_context()
    version = request.headers.get("MCP-Protocol-Version", "")
    events = _events(context, exchange, asker, run, question_id, version, time.monotonic() + wait_seconds)
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy passes each event on at once
    return response


def _events(context: contextvars.Context, exchange: Exchange, asker: StreamAsker, run: Callable[[], HttpResponse],
            question_id: str | None, version: str, deadline: float) -> Iterator[bytes]:
    for asked in range(1, MAX_QUESTIONS + 1):
        pending = asker.pending
        if pending is not None and pending.page:
            answer = yield from _page_wait(context, exchange, pending, deadline)
        else:
            answer = yield from _question(context, asker, question_id, version, deadline)
        if answer is _GONE:
            return  # the client left: nothing more runs
        asker.heard(answer)
        exchange.refusal = None
        response = context.run(_run_again, run)
        if asker.pending is None:
            if pending is not None and pending.url is not None and not pending.page \
                    and isinstance(answer, dict) and answer.get("action") == "accept":
                # The page had answered by the time the call ran again: no wait, but the URL
                # question is complete all the same.
                yield _complete(pending)
            yield b"event: message\ndata: " + response.content + b"\n\n"
            return
        question_id = None
        if asked < MAX_QUESTIONS and asker.pending.page:
            continue  # the wait for the page asks the client nothing
        if asked < MAX_QUESTIONS:
            try:
                question_id = context.run(question_opened, _asked(exchange),
                                          ttl_seconds=max(1.0, deadline - time.monotonic()))
            except _STORE_ERRORS as exc:
                logger.warning("an MCP question could not be asked: %s", type(exc).__name__)
        if question_id is None:
            # Asked too often (the card kept changing), or nowhere to hear from: the call ends
            # as though the question went unanswered.
            asker.heard(None)
            response = context.run(_run_again, run)
            yield b"event: message\ndata: " + response.content + b"\n\n"
            return


_GONE: dict[str, Any] = {}


def _question(context: contextvars.Context, asker: StreamAsker, question_id: str | None, version: str,
              deadline: float) -> Generator[bytes, None, dict[str, Any] | None]:
    """Send the pending question and wait for its answer: the answer, None when none came in
    time, ``_GONE`` when the client left."""
    question = asker.pending
    assert question is not None and question_id is not None  # noqa: S101 - only a question opened is sent
    wait = context.run(answer_wait, question_id)
    try:
        params: dict[str, Any] = {"message": question.text, "requestedSchema": question.schema}
        if question.url is not None:  # only asked of 2025-11-25 clients, where URL mode began
            params = {"mode": "url", "message": question.text, "url": question.url,
                      "elicitationId": elicitation_id(question.key)}
        elif version != "2025-06-18":
            params = {"mode": "form", **params}  # form mode is named from 2025-11-25 on
        connections.close_all()  # nothing held while the question is out
        yield _event({"jsonrpc": "2.0", "id": question_id, "method": "elicitation/create", "params": params})
        while (left := deadline - time.monotonic()) > 0:
            try:
                answer = context.run(wait.next, min(settings.ARKME_MCP_HEARTBEAT_SECONDS, left))
            except _STORE_ERRORS as exc:
                logger.warning("an MCP answer could not be heard: %s", type(exc).__name__)
                return {"error": True}
            if answer is not None:
                return answer
            if context.run(caller_gone):
                return _GONE
            yield b": waiting for the answer\n\n"
        return None
    finally:
        context.run(wait.close)


def _page_wait(context: contextvars.Context, exchange: Exchange, question: Question,
               deadline: float) -> Generator[bytes, None, dict[str, Any] | None]:
    """Wait for the account's answer on the approval page the client's human opened: the
    approval is read every ``PAGE_POLL_SECONDS``, each read on a connection given back at once.
    Once answered, the client hears that the URL question is complete; returns the (unchanged)
    acceptance, None when no answer came in time, ``_GONE`` when the client left."""
    connections.close_all()
    beat = time.monotonic()
    while (left := deadline - time.monotonic()) > 0:
        try:
            decided = context.run(_page_decided, exchange, question.key)
        except _STORE_ERRORS as exc:
            # The database is away for a moment: the wait goes on (the call, run again after
            # it, answers the outage if it lasts).
            logger.warning("an approval page's answer could not be read: %s", type(exc).__name__)
            decided = False
        if decided:
            yield _complete(question)
            return {"action": "accept", "content": None}
        if context.run(caller_gone):
            return _GONE
        time.sleep(min(PAGE_POLL_SECONDS, left))
        if time.monotonic() - beat >= settings.ARKME_MCP_HEARTBEAT_SECONDS:
            beat = time.monotonic()
            yield b": waiting for the approval page\n\n"
    return None


def _complete(question: Question) -> bytes:
    """The notice that a URL question's interaction ended (2025-11-25's elicitation complete)."""
    return _event({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                   "params": {"elicitationId": elicitation_id(question.key)}})


def _page_decided(exchange: Exchange, key: str) -> bool:
    try:
        return page_decided(exchange.session, key)
    finally:
        connections.close_all()


def _run_again(run: Callable[[], HttpResponse]) -> HttpResponse:
    with budget_renewed():
        return run()


def _event(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return f"event: message\ndata: {data}\n\n".encode()

