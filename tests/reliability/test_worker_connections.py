"""gunicorn.conf.py's worker gives back, after each request, any database connection the
request's greenlet still holds: one opened after Django gave the request's back (a
``request_finished`` receiver's query, a response never closed) must not stay with a client
that then sits idle on its keep-alive connection, holding a pool slot or a server connection."""
from __future__ import annotations

import runpy
import threading
from pathlib import Path

import pytest
from django.db import connections
from gunicorn.workers.ggevent import GeventWorker

from tests.support.services import require_service

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres


@pytest.mark.django_db(transaction=True)
def test_a_connection_opened_after_the_response_is_given_back(monkeypatch):
    # The test database on SQLite is in memory, one connection every thread shares and none closes.
    require_service("PostgreSQL", connections["default"].vendor == "postgresql",
                    "set DATABASE_URL=postgres://... (make test runs on SQLite by default)")
    worker_class = runpy.run_path(str(ROOT / "gunicorn.conf.py"))["Worker"]

    def handled(self, listener_name, req, sock, addr):
        connections["default"].ensure_connection()  # opened once Django had given its own back
        return True

    monkeypatch.setattr(GeventWorker, "handle_request", handled)
    held: list[object] = []

    def serve() -> None:  # a thread of its own: its own connections, as a greenlet has
        try:
            assert worker_class.handle_request(worker_class.__new__(worker_class), "listener", None, None, None)
            held.append(connections["default"].connection)
        finally:
            connections.close_all()

    thread = threading.Thread(target=serve)
    thread.start()
    thread.join(timeout=60)
    assert held == [None], "the worker left a database connection with the greenlet after its request"
