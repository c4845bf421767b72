"""Idempotency claims of a dead process expire: a repeat takes an expired claim over (one of
two racing repeats), does the work once, and a call that outlived its claim cannot overwrite
or delete its successor's; a live claim is waited for within the repeat's own budget."""
from __future__ import annotations

import time
from datetime import timedelta

from django.utils import timezone

from arkme.conversations.models import AgentSession
from tests.support.errors import assert_error
from toolregistry.arguments import arguments_digest
from toolregistry.idempotency import (
    CallResult,
    _take_over,
    claim_expiry,
    idempotency_claim,
    idempotency_complete,
    idempotency_release,
)
from toolregistry.models import IdempotencyRecord, IdempotencyStatus, ToolCall


def claim(dsh, session: str, key: str = "k", digest: str = "d"):
    agent_session = AgentSession.objects.get(public_id=session)
    return idempotency_claim(client=agent_session.client, session=agent_session, key=key, tool_name="arkme_context",
                             digest=digest)


def age(key: str, seconds: float) -> None:
    IdempotencyRecord.objects.filter(key=key).update(created_at=timezone.now() - timedelta(seconds=seconds))


def test_a_claim_left_in_progress_past_its_expiry_is_taken_over_and_the_work_done_once(dsh, session):
    args_digest_call = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="first")
    assert args_digest_call.status_code == 200
    # A process died holding this key: its claim stays in progress, its call never answered.
    IdempotencyRecord.objects.filter(key="first").update(status=IdempotencyStatus.IN_PROGRESS, response_status=None,
                                                         response_body=None)
    age("first", claim_expiry().total_seconds() + 1)
    calls_before = ToolCall.objects.filter(replayed=False).count()
    retried = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="first")
    assert retried.status_code == 200, retried.content
    assert ToolCall.objects.filter(replayed=False).count() == calls_before + 1  # it ran, once
    record = IdempotencyRecord.objects.get(key="first")
    assert record.status == IdempotencyStatus.COMPLETE and record.response_status == 200
    # The next repeat replays it.
    assert dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="first").json() == retried.json()
    assert ToolCall.objects.filter(replayed=True).count() == 1


def test_of_two_repeats_only_one_takes_an_expired_claim(dsh, session):
    first, _ = claim(dsh, session)
    age("k", claim_expiry().total_seconds() + 1)
    seen = IdempotencyRecord.objects.get(key="k")
    # Both repeats read the same expired row; the first UPDATE moves its time on.
    assert _take_over(IdempotencyRecord.objects.get(key="k")) is not None
    assert _take_over(seen) is None


def test_a_call_that_outlived_its_claim_neither_completes_nor_releases_its_successors(dsh, session):
    dead, _ = claim(dsh, session)
    age("k", claim_expiry().total_seconds() + 1)
    dead.created_at = IdempotencyRecord.objects.get(key="k").created_at
    successor, replay = claim(dsh, session)
    assert successor is not None and replay is None and successor.pk == dead.pk
    idempotency_complete(dead, CallResult(200, {"result": "stale"}))
    idempotency_release(dead)
    record = IdempotencyRecord.objects.get(key="k")
    assert record.status == IdempotencyStatus.IN_PROGRESS  # still the successor's
    idempotency_complete(successor, CallResult(200, {"result": "fresh"}))
    assert IdempotencyRecord.objects.get(key="k").response_body == {"result": "fresh"}


def test_a_live_claim_is_waited_for_within_the_repeats_budget_then_409(dsh, session, settings):
    settings.ARKME_REQUEST_BUDGET_SECONDS = 3
    # A call with the same arguments still running, well inside its expiry.
    claim(dsh, session, key="live", digest=arguments_digest("arkme_context", {}))
    started = time.monotonic()
    response = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="live")
    waited = time.monotonic() - started
    assert_error(response, 409, "idempotency_in_progress")
    # It waited for the first call while its own budget allowed, and no longer.
    assert 1 <= waited < settings.ARKME_REQUEST_BUDGET_SECONDS + 1


def test_a_claim_that_completes_while_a_repeat_waits_is_replayed(dsh, session, monkeypatch):
    first, _ = claim(dsh, session, key="k", digest="d")
    import toolregistry.idempotency as idempotency

    real_sleep = time.sleep

    def complete_then_sleep(seconds: float) -> None:
        idempotency_complete(first, CallResult(200, {"result": {"n": 1}}))
        real_sleep(seconds)

    monkeypatch.setattr(idempotency.time, "sleep", complete_then_sleep)
    record, replay = claim(dsh, session, key="k", digest="d")
    assert record is None and replay == CallResult(200, {"result": {"n": 1}})
