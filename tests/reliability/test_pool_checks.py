"""The database pool hands out no connection PostgreSQL has ended.

PostgreSQL ends a connection that sits idle in a web process's pool when it restarts, when an
administrator ends it, or past ``idle_session_timeout``. A request that got such a connection
would fail; the pool checks each connection as it hands it out (``CONN_HEALTH_CHECKS``,
config/environment.py), finds it ended and opens another, so every request after the fact is
answered as before, on both doors. Without the check the first requests on each process fail.
"""
from __future__ import annotations

import http.client
import json

import pytest

pytestmark = pytest.mark.postgres


def _mcp_call(port: int, session: str, body: bytes, headers: dict[str, str]) -> int:
    """The status of an MCP call, 0 when it was refused as a tool error or not answered."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", f"/dsh/v1/sessions/{session}/mcp", body, headers)
        response = connection.getresponse()
        return response.status if b'"isError":true' not in response.read() else 0
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        connection.close()


def _ended_idle(stack) -> int:
    """End every connection to the stack's database but psql's own; how many were ended."""
    (count,) = stack.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                         " WHERE datname = current_database() AND pid <> pg_backend_pid()")
    return int(count[0])


def test_no_request_fails_on_a_connection_the_database_ended_while_it_was_idle(production_stack, figures):
    stack = production_stack()
    web = stack.web()
    status, _, opened = web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"]})
    assert status == 201, opened
    session = opened["session"]
    mcp = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "arkme_context", "arguments": {}}}).encode()
    headers = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

    def calls() -> list[tuple[str, int]]:
        answers = []
        for _ in range(20):  # more than both processes' pools hold, so every pooled one is handed out
            answers.append(("rest", web.call("POST", f"sessions/{session}/tools/arkme_context/execute",
                                             {"arguments": {}})[0]))
            answers.append(("mcp", _mcp_call(web.port, session, mcp, headers)))
        return answers

    assert {status for _, status in calls()} == {200}
    for round_ in range(3):
        ended = _ended_idle(stack)
        assert ended >= 2, ended  # each process keeps DATABASE_POOL_MIN_SIZE connections
        failed = [answer for answer in calls() if answer[1] != 200]
        figures.record(f"pool_ended_connections_round_{round_}", ended)
        assert failed == [], f"{len(failed)} requests failed after {ended} idle connections were ended: {failed}"
