"""How a 2025-era client's answer to a question reaches the process that asked it.

The process serving a ``tools/call`` holds the SSE stream on which it sent
``elicitation/create``; the client POSTs its answer to the same endpoint, which may reach any
web process or node. The answer travels through Redis pub/sub when the broker is Redis (every
process and node reaches that server already), through the database otherwise (a row in
``PendingQuestion``, written once by the answering process and polled by the waiting one).

Either way the question is bound to the client and the session it was asked of, its id is
unguessable and made here, and it is answered at most once before it expires: a second, a
late or a foreign answer is refused. The waiting side holds no database connection between
its reads.
"""
from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from celery import current_app
from celery.backends.redis import RedisBackend
from django.db import connection
from django.utils import timezone

from arkme.kernel.ids import token_digest
from arkme.kernel.outages import DATABASE_ERRORS

from ..models import PendingQuestion

logger = logging.getLogger(__name__)

ID_PREFIX = "arkq_"
# The database channel's polling: quick at first (a human answering a form takes seconds, an
# SDK's callback in a test milliseconds), then at most once a second.
POLL_FIRST_SECONDS = 0.05
POLL_MAX_SECONDS = 1.0

# Deliver an answer once: the question must still be waiting and be this client's in this
# session; then it is gone, and the answer is published to the waiting process.
_DELIVER = """
local bound = redis.call('GET', KEYS[1])
if not bound or bound ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1
"""


@dataclass(frozen=True)
class Asked:
    """Who a question was asked of: the client and the session (primary keys)."""

    client_id: int
    session_id: int

    @property
    def binding(self) -> str:
        return f"{self.client_id}:{self.session_id}"


class AnswerWait(Protocol):
    """The waiting side of one question."""

    def next(self, timeout: float) -> dict[str, Any] | None:
        """The answer, or None when none came within ``timeout`` seconds."""

    def close(self) -> None:
        """Stop waiting and forget the question: a later answer is refused."""


def _redis() -> Any | None:
    backend = current_app.backend
    return backend.client if isinstance(backend, RedisBackend) else None


def _key(question_id: str) -> str:
    return f"arkme:mcp:question:{token_digest(question_id)}"


def question_opened(asked: Asked, *, ttl_seconds: float) -> str:
    """A new question's id, waiting for its answer for ``ttl_seconds``. Raises the store's
    error when it cannot be reached (the caller then does not ask)."""
    question_id = ID_PREFIX + secrets.token_urlsafe(24)
    client = _redis()
    if client is not None:
        client.set(_key(question_id), asked.binding, px=max(1, int(ttl_seconds * 1000)))
        return question_id
    now = timezone.now()
    # Questions whose process died before closing them: gone once expired.
    PendingQuestion.objects.filter(expires_at__lte=now).delete()
    PendingQuestion.objects.create(token_hash=token_digest(question_id), client_id=asked.client_id,
                                   session_id=asked.session_id, expires_at=now + timedelta(seconds=ttl_seconds))
    return question_id


def answer_delivered(question_id: str, asked: Asked, answer: dict[str, Any]) -> bool:
    """Hand the client's answer to the waiting process: False when no question with this id is
    waiting for this client in this session (never asked, already answered, expired, or
    another's)."""
    if not question_id.startswith(ID_PREFIX) or len(question_id) > 100:
        return False
    client = _redis()
    if client is not None:
        key = _key(question_id)
        payload = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        return bool(client.eval(_DELIVER, 2, key, key + ":answer", asked.binding, payload))
    return PendingQuestion.objects.filter(
        token_hash=token_digest(question_id), client_id=asked.client_id, session_id=asked.session_id,
        answered_at__isnull=True, expires_at__gt=timezone.now(),
    ).update(answer=answer, answered_at=timezone.now()) == 1


def answer_wait(question_id: str) -> AnswerWait:
    """Start listening for the answer: before the question leaves, so none is missed."""
    client = _redis()
    if client is not None:
        return _RedisWait(client, question_id)
    return _DatabaseWait(question_id)


class _RedisWait:
    def __init__(self, client: Any, question_id: str) -> None:
        self._client, self._key = client, _key(question_id)
        self._pubsub = client.pubsub(ignore_subscribe_messages=True)
        self._pubsub.subscribe(self._key + ":answer")

    def next(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self._pubsub.get_message(timeout=left)
            if message is not None and message.get("type") == "message":
                answer: dict[str, Any] = json.loads(message["data"])
                return answer
        return None

    def close(self) -> None:
        try:
            self._client.delete(self._key)
        except Exception as exc:  # redis-py's errors: the key expires by itself
            logger.warning("an MCP question was not removed from Redis: %s", type(exc).__name__)
        finally:
            self._pubsub.close()


class _DatabaseWait:
    def __init__(self, question_id: str) -> None:
        self._hash = token_digest(question_id)
        self._pause = POLL_FIRST_SECONDS

    def next(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = (PendingQuestion.objects.filter(token_hash=self._hash, answered_at__isnull=False)
                         .values_list("answer", flat=True).first())
            finally:
                connection.close()  # back to the pool until the next look
            if found is not None:
                return dict(found)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(self._pause, left))
            self._pause = min(self._pause * 1.5, POLL_MAX_SECONDS)

    def close(self) -> None:
        try:
            PendingQuestion.objects.filter(token_hash=self._hash).delete()
        except DATABASE_ERRORS as exc:  # the row expires, and the next question removes it
            logger.warning("an MCP question was not removed from the database: %s", type(exc).__name__)
        finally:
            connection.close()
