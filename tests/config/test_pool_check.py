"""The pool's check (config/postgresql/base.py): a quiet idle connection is handed out without
a query; one PostgreSQL ended, or with anything waiting on its socket, goes through psycopg's
own check, which finds it ended. Under gevent too, where the system's ``poll`` is asked rather
than gevent's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from config.postgresql.base import check_unless_quiet

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres


def _params() -> dict:
    from django.db import connection

    return {**connection.get_connection_params(), "autocommit": True}


def _ended_by_the_server(conn: psycopg.Connection) -> None:
    with psycopg.connect(**_params()) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
    deadline = time.monotonic() + 30
    while not conn.pgconn.socket or time.monotonic() < deadline:  # its goodbye on the way
        import select

        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN)
        if poller.poll(100):
            return
    raise AssertionError("the ended connection's socket never became readable")


def test_a_quiet_connection_is_handed_out_without_a_query(postgres, monkeypatch):
    asked: list[object] = []
    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(asked.append))
    with psycopg.connect(**_params()) as conn:
        conn.execute("SELECT 1")
        check_unless_quiet(conn)
        assert asked == []
        conn.autocommit = False
        conn.execute("SELECT 1")  # in a transaction: not idle, so checked
        check_unless_quiet(conn)
        assert asked == [conn]


def test_a_connection_the_server_ended_fails_the_check(postgres):
    with psycopg.connect(**_params()) as conn:
        _ended_by_the_server(conn)
        with pytest.raises(psycopg.OperationalError):
            check_unless_quiet(conn)


_UNDER_GEVENT = """
from gevent import monkey
monkey.patch_all()
import json, sys, psycopg
from psycopg_pool import ConnectionPool
from config.postgresql.base import check_unless_quiet
params = json.loads(sys.argv[1])
asked = []
real = ConnectionPool.check_connection
ConnectionPool.check_connection = staticmethod(lambda c: (asked.append(1), real(c)))
conn = psycopg.connect(**params)
check_unless_quiet(conn)
quiet = len(asked)
with psycopg.connect(**params) as admin:
    admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
import time
for _ in range(300):
    try:
        check_unless_quiet(conn)
    except psycopg.OperationalError:
        print(json.dumps({"quiet": quiet, "ended": "refused"}))
        break
    time.sleep(0.1)
else:
    print(json.dumps({"quiet": quiet, "ended": "handed out"}))
"""


def test_under_gevent_an_ended_connection_is_found_and_a_quiet_one_handed_out(postgres):
    params = {k: v for k, v in _params().items() if isinstance(v, (str, int, bool, float)) or v is None}
    done = subprocess.run([sys.executable, "-c", _UNDER_GEVENT, json.dumps(params)], cwd=ROOT,
                          env={**os.environ}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"quiet": 0, "ended": "refused"}
