"""Under a real gunicorn, the audit rows a worker holds are written when it stops gracefully."""
from __future__ import annotations

import sqlite3

from tests.support.live import call, deployment, gunicorn

WINDOW = 10  # longer than the test: only the stop can write the rows


def test_a_graceful_stop_writes_the_rows_the_worker_held(tmp_path):
    env, world = deployment(tmp_path, ARKME_AUDIT_WRITE_BEHIND_SECONDS=str(WINDOW))
    process, port = gunicorn(env)
    try:
        key = world["dsh_key"]
        _, _, opened = call(port, key, "POST", "sessions", {"account": world["accounts"]["alice"]})
        session = opened["session"]
        for _ in range(3):
            status, _, body = call(port, key, "POST", f"sessions/{session}/tools/arkme_context/execute",
                                   {"arguments": {}})
            assert status == 200, body
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0, process.stderr.read().decode()
    with sqlite3.connect(tmp_path / "arkme.sqlite3") as database:
        rows = database.execute("SELECT session_public_id, tool_name, outcome, surface FROM toolregistry_toolcall"
                                ).fetchall()
    assert rows == [(session, "arkme_context", "ok", "rest")] * 3
