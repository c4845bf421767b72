"""2025-era MCP questions on the production stack: the call's SSE stream on one web node, the
client's answer POSTed to another; through Redis pub/sub when the broker is Redis, through the
database without it. While the question waits, the stream holds no database connection, and a
client that leaves ends the wait.
"""
from __future__ import annotations

import subprocess
import time

import pytest

from tests.support.mcp import SseCall
from tests.support.stack import redis_db

pytestmark = pytest.mark.postgres
APPROVE = {"action": "accept", "content": {"approve": True}}
# Without the pool a connection given back is closed, so pg_stat_activity shows the held ones.
NO_POOL = {"DATABASE_POOL_MAX_SIZE": "0"}


def _nodes(stack, **env):
    first, second = stack.web(workers=1, **env), stack.web(workers=1, **env)
    status, _, opened = first.call("POST", "sessions", {"account": stack.world["accounts"]["alice"]})
    assert status == 201, opened
    session = opened["session"]
    return [f"http://127.0.0.1:{web.port}/dsh/v1/sessions/{session}/mcp" for web in (first, second)]


def _connections(stack) -> int:
    [(count,)] = stack.sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()")
    return int(count)


def _changes(stack) -> int:
    [(count,)] = stack.sql("SELECT count(*) FROM toolregistry_toolcall WHERE tool_name = 'arkme_id_change' "
                           "AND outcome = 'ok'")
    return int(count)


@pytest.mark.parametrize("channel", ["redis", "database"])
def test_the_answer_reaches_the_node_that_asked(production_stack, channel):
    stack = production_stack()
    env = {**NO_POOL, **({"CELERY_BROKER_URL": ""} if channel == "database" else {})}
    asking, answering = _nodes(stack, **env)
    call = SseCall(asking, stack.key, "arkme_id_change", {"arkme_id": "alice_nodes"})
    try:
        question = call.event()
        assert call.content_type.startswith("text/event-stream")
        assert question["method"] == "elicitation/create" and "alice_nodes" in question["params"]["message"]
        if channel == "redis":
            # The asking process waits on Redis alone: no connection of either node is open.
            assert _connections(stack) == 0
        assert call.answer(answering, question, APPROVE).status_code == 202
        final = call.event()
        assert final["result"]["isError"] is False, final
        assert final["result"]["structuredContent"]["account"]["arkme_id"] == "alice_nodes"
        assert call.event() is None  # the stream ended with the result
        # Answering again, on either node, is refused and runs nothing.
        for url in (answering, asking):
            again = call.answer(url, question, APPROVE)
            assert again.status_code == 400 and again.json()["error"]["code"] == -32600
        assert _changes(stack) == 1
        assert stack.sql("SELECT count(*) FROM toolregistry_pendingquestion") == [("0",)]
    finally:
        call.close()


def _questions_in_redis() -> list[str]:
    done = subprocess.run(["redis-cli", "-n", str(redis_db()), "--scan", "--pattern", "arkme:mcp:question:*"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_a_client_that_leaves_ends_the_wait(production_stack):
    stack = production_stack()
    asking, answering = _nodes(stack, ARKME_MCP_HEARTBEAT_SECONDS="1", **NO_POOL)
    call = SseCall(asking, stack.key, "arkme_id_change", {"arkme_id": "alice_gone"})
    question = call.event()
    assert question["method"] == "elicitation/create" and len(_questions_in_redis()) == 1
    call.close()
    # The next heartbeat finds the client gone and forgets the question (a guard, not a timing).
    deadline = time.monotonic() + 60
    while _questions_in_redis():
        assert time.monotonic() < deadline, "the question outlived its client"
        time.sleep(0.2)
    assert call.answer(answering, question, APPROVE).status_code == 400
    assert _changes(stack) == 0


def test_a_url_question_on_one_node_waits_for_the_page_answered_on_another(production_stack):
    from tests.support.pages import page_answer_over_http

    stack = production_stack()
    asking, answering = _nodes(stack, ARKME_APPROVAL_PAGE_TOOLS="arkme_id_change", ARKME_MCP_HEARTBEAT_SECONDS="1",
                               **NO_POOL)
    call = SseCall(asking, stack.key, "arkme_id_change", {"arkme_id": "alice_paged"})
    try:
        question = call.event()
        params = question["params"]
        assert params["mode"] == "url" and "/approvals/" in params["url"], question
        assert call.answer(answering, question, {"action": "accept"}).status_code == 202
        # The stream waits for the page, reading the approval now and then on a connection it
        # gives back at once: at some moment no connection of either node is open.
        seen = []
        for _ in range(20):
            seen.append(_connections(stack))
            if 0 in seen:
                break
            time.sleep(0.1)
        assert 0 in seen, seen
        assert _changes(stack) == 0
        node = answering.split("/dsh/")[0]
        assert page_answer_over_http(node, "alice", stack.world["logins"]["alice"], params["url"]) == 200
        complete = call.event()
        assert complete["method"] == "notifications/elicitation/complete"
        assert complete["params"]["elicitationId"] == params["elicitationId"]
        final = call.event()
        assert final["result"]["structuredContent"]["account"]["arkme_id"] == "alice_paged", final
        assert call.event() is None
        assert _changes(stack) == 1
    finally:
        call.close()
