"""Limits on the production stack: the counts are shared by every process of two web nodes,
in Redis (the broker) and in PostgreSQL (no Redis broker); a Redis that goes away refuses
writes (503) and lets reads through, and the limits count again once it is back."""
from __future__ import annotations

import time

import pytest
import redis

from tests.support.errors import assert_error
from tests.support.live import answer
from tests.support.stack import redis_db

pytestmark = [pytest.mark.postgres]

LIMIT = 6
RULES = f"arkme_context={LIMIT}/day/account,arkme_id_change=5/day/account"


def _clear_of_the_day_end(url: str) -> None:
    """Day windows: begin the counts at least two minutes before one ends (Redis's clock)."""
    left = 86400 - redis.Redis.from_url(url).time()[0] % 86400
    if left < 120:
        time.sleep(left + 1)


def _open(node, stack, name: str) -> str:
    status, _, opened = node.call("POST", "sessions", {"account": stack.world["accounts"][name]})
    assert status == 201, opened
    return str(opened["session"])


def _context(node, session: str):
    return answer(node.port, node.key, "POST", f"sessions/{session}/tools/arkme_context/execute", {"arguments": {}})


def _id_change(node, session: str):
    return answer(node.port, node.key, "POST", f"sessions/{session}/tools/arkme_id_change/execute",
                  {"arguments": {"arkme_id": "carol_renamed"}})


def _statuses(nodes, session: str, calls: int) -> list[int]:
    answers = [_context(nodes[index % len(nodes)], session) for index in range(calls)]
    for refused in (a for a in answers if a.status_code == 429):
        assert_error(refused, 429, "throttled")
    return [a.status_code for a in answers]


def test_the_limits_are_shared_by_two_nodes_in_redis_and_in_postgresql(production_stack):
    stack = production_stack(ARKME_RATE_LIMITS=RULES)
    _clear_of_the_day_end(stack.env["CELERY_BROKER_URL"])
    on_redis = [stack.web(), stack.web()]
    alice = _open(on_redis[0], stack, "alice")
    assert _statuses(on_redis, alice, LIMIT + 4) == [200] * LIMIT + [429] * 4
    on_database = [stack.web(CELERY_BROKER_URL=""), stack.web(CELERY_BROKER_URL="")]
    bob = _open(on_database[0], stack, "bob")
    assert _statuses(on_database, bob, LIMIT + 4) == [200] * LIMIT + [429] * 4
    assert stack.sql("SELECT key, hits FROM toolregistry_ratewindow") == [
        (f"arkme_context:86400:account:{_account_id(stack, 'bob')}", str(LIMIT))]
    assert int(stack.sql("SELECT count(*) FROM toolregistry_toolcall WHERE outcome = 'throttled'")[0][0]) == 8


def _account_id(stack, name: str) -> str:
    public_id = stack.world["accounts"][name]
    return stack.sql(f"SELECT id FROM accounts_account WHERE public_id = '{public_id}'")[0][0]  # noqa: S608


def test_a_redis_that_went_away_refuses_writes_and_lets_reads_through(production_stack, fault_proxy):
    stack = production_stack(ARKME_RATE_LIMITS=RULES)
    proxy = fault_proxy(6379)
    node = stack.web(CELERY_BROKER_URL=f"redis://127.0.0.1:{proxy.port}/{redis_db()}")
    carol = _open(node, stack, "carol")
    assert_error(_id_change(node, carol), 403, "approval_required")  # counted, then refused for its approval
    for fault in (proxy.down, proxy.hang):
        fault()
        assert_error(_id_change(node, carol), 503, "dependency_unavailable")
        assert _context(node, carol).status_code == 200
    proxy.up()
    assert_error(_id_change(node, carol), 403, "approval_required")
    outcomes = [row[0] for row in stack.sql("SELECT outcome FROM toolregistry_toolcall WHERE tool_name = "
                                            "'arkme_id_change' ORDER BY id")]
    assert outcomes == ["approval_required", "dependency_unavailable", "dependency_unavailable", "approval_required"]
