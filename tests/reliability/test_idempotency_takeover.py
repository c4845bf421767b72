"""A web process killed while it holds an Idempotency-Key claim: a retry before the claim's
expiry waits within its budget and answers 409 idempotency_in_progress; a retry after it takes
the claim over and completes (200), and the work is done once."""
from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time

import pytest

from tests.reliability.test_celery_worker import heavy_svg
from tests.support.errors import Answer, assert_error

pytestmark = [pytest.mark.postgres]
BUDGET = 8  # ARKME_REQUEST_BUDGET_SECONDS, scaled down: the claim expires 10 s after it
EXPIRY = BUDGET + 10


def keyed_answer(port: int, key: str, session: str, extension: str, path: str, idempotency_key: str) -> Answer:
    """A keyed prepare's answer with its headers; status 0 when the connection dropped."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = {"arguments": {"action": "prepare", "extension": extension, "source": "workspace",
                          "workspace_paths": [path]}}
    try:
        connection.request("POST", f"/dsh/v1/sessions/{session}/tools/arkme_extension_preview_add/execute",
                           json.dumps(body), {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                                              "Idempotency-Key": idempotency_key})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    except (OSError, http.client.HTTPException) as exc:
        return Answer(0, {}, {"dropped": type(exc).__name__})
    finally:
        connection.close()


def keyed_prepare(port: int, key: str, session: str, extension: str, path: str,
                  idempotency_key: str) -> tuple[int, dict]:
    answered = keyed_answer(port, key, session, extension, path, idempotency_key)
    return answered.status_code, json.loads(answered.content or b"{}")


def test_a_killed_processs_claim_expires_and_a_retry_does_the_work_once(production_stack, figures):
    stack = production_stack(ARKME_REQUEST_BUDGET_SECONDS=str(BUDGET))
    web = stack.web()
    stack.worker()
    workspace = stack.folder / "workspaces" / stack.world["workspace"]
    (workspace / "slow.svg").write_bytes(heavy_svg())
    status, _, opened = web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"],
                                                      "workspace": stack.world["workspace"]})
    assert status == 201, opened
    session = opened["session"]
    assert web.call("PUT", f"sessions/{session}/phases/attachments")[0] == 200
    extension = stack.world["extensions"]["alice-ext"]
    args = (web.port, stack.key, session, extension, "slow.svg", "retry-me")

    first: list = []
    caller = threading.Thread(target=lambda: first.append(keyed_prepare(*args)))
    caller.start()
    deadline = time.monotonic() + 30
    while not stack.sql("SELECT status FROM toolregistry_idempotencyrecord WHERE key = 'retry-me'"):
        assert time.monotonic() < deadline, "the call never claimed its key"
        time.sleep(0.02)
    claimed = time.monotonic()
    for pid in web.workers():  # the process holding the claim, whichever it is
        os.kill(pid, signal.SIGKILL)
    caller.join(timeout=60)
    assert first and first[0][0] == 0, first  # it never answered
    assert stack.sql("SELECT status FROM toolregistry_idempotencyrecord WHERE key = 'retry-me'") == [("in_progress",)]
    web.workers(2)  # gunicorn started new ones
    assert web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"]})[0] == 201

    # Too early: the claim may still be a live call's. The retry waits within its budget, then 409.
    early_started = time.monotonic()
    early = keyed_answer(*args)
    early_seconds = time.monotonic() - early_started
    if time.monotonic() - claimed < EXPIRY - 1:
        assert_error(early, 409, "idempotency_in_progress")
        assert early_seconds < BUDGET + 15, early_seconds  # a worker just started, on a loaded machine

    # After the expiry: taken over, done, once.
    time.sleep(max(0.0, claimed + EXPIRY + 1 - time.monotonic()))
    retried_at = time.monotonic()
    retry = keyed_prepare(*args)
    assert retry[0] == 200, retry
    operation = retry[1]["result"]["operation"]
    assert keyed_prepare(*args) == retry  # and replayed from then on
    operations = stack.sql("SELECT public_id FROM galleries_pendingoperation")
    assert operations == [(operation,)], operations
    assert stack.sql("SELECT status, response_status FROM toolregistry_idempotencyrecord WHERE key = 'retry-me'") == [
        ("complete", "200")]
    figures.add("idempotency_claim_takeover_seconds_after_kill", round(retried_at - claimed, 1))
    figures.add("idempotency_claims_taken_over", 1)
