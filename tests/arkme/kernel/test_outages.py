"""A database outage is 503 ``database_unavailable`` on every door (REST, its authentication,
MCP before and inside a tool call, a browser page, what escapes a middleware), and only an
outage is: a bug the database reports stays a 500."""
from __future__ import annotations

import sqlite3
import sys

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, InterfaceError, OperationalError, ProgrammingError
from django.test import Client, RequestFactory
from psycopg import errors as pg
from psycopg_pool import PoolTimeout
from rest_framework.test import APIClient

from arkme.kernel.outages import is_database_outage
from tests.support.errors import assert_error, assert_tool_error
from tests.support.mcp import Mcp


def wrapped(django_error: type[Exception], cause: BaseException) -> Exception:
    """What Django raises: its own error class, the driver's error as the cause."""
    try:
        raise django_error(str(cause)) from cause
    except Exception as exc:
        return exc


@pytest.mark.parametrize("error,outage", [
    (wrapped(OperationalError, psycopg.OperationalError("connection refused")), True),
    (wrapped(OperationalError, pg.ConnectionFailure("lost")), True),
    (wrapped(OperationalError, pg.QueryCanceled("statement timeout")), True),
    (wrapped(OperationalError, pg.AdminShutdown("terminating connection")), True),
    (wrapped(OperationalError, pg.TooManyConnections("too many clients")), True),
    (wrapped(OperationalError, pg.DeadlockDetected("deadlock")), True),
    (wrapped(OperationalError, pg.LockNotAvailable("could not obtain lock")), True),
    (wrapped(InterfaceError, psycopg.InterfaceError("the connection is closed")), True),
    (wrapped(OperationalError, PoolTimeout("couldn't get a connection after 10.00 sec")), True),
    (PoolTimeout("couldn't get a connection"), True),
    (wrapped(OperationalError, sqlite3.OperationalError("database is locked")), True),
    # Bugs and rules, which an outage code would hide.
    (wrapped(OperationalError, pg.ProgramLimitExceeded("index row size exceeds")), False),
    (wrapped(OperationalError, sqlite3.OperationalError("no such table: x")), False),
    (wrapped(InterfaceError, sqlite3.InterfaceError("bad parameter")), False),
    (wrapped(IntegrityError, pg.UniqueViolation("duplicate key")), False),
    (wrapped(ProgrammingError, pg.UndefinedTable("relation does not exist")), False),
    (ProgrammingError("Cannot open a new connection in an atomic block."), False),
    (RuntimeError("boom"), False),
])
def test_only_an_outage_is_an_outage(error, outage):
    assert is_database_outage(error) is outage


def refused() -> Exception:
    return wrapped(OperationalError, psycopg.OperationalError("connection failed: Connection refused"))


def raise_outage(*args, **kwargs):
    raise refused()


def test_rest_authentication_in_an_outage_is_503_database_unavailable(dsh, session, monkeypatch, caplog):
    from toolregistry.api import authentication

    monkeypatch.setattr(authentication, "session_for_key", raise_outage)
    monkeypatch.setattr(authentication, "client_for_key", raise_outage)
    for response in (dsh.execute(session, "arkme_context", {}), dsh.api.get("/dsh/v1/catalog")):
        assert_error(response, 503, "database_unavailable")
    # One line each, the request's 5xx line, with the outage as its cause.
    lines = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(lines) == 2 and all(r.exc_info and "Connection refused" in str(r.exc_info[1]) for r in lines), [
        (r.name, r.getMessage()) for r in caplog.records]


def test_a_bug_the_database_reports_stays_a_500(dsh, session, monkeypatch):
    from toolregistry.api import authentication

    def bug(*args, **kwargs):
        raise wrapped(ProgrammingError, pg.UndefinedTable("relation does not exist"))

    monkeypatch.setattr(authentication, "session_for_key", bug)
    dsh.api.raise_request_exception = False
    response = dsh.execute(session, "arkme_context", {})
    assert_error(response, 500, "internal_error")


def test_mcp_before_the_call_is_an_http_503_envelope(dsh, session, monkeypatch):
    from toolregistry.mcp import door

    monkeypatch.setattr(door, "session_for_key", raise_outage)
    response = Mcp(dsh, session).rpc("tools/call", {"name": "arkme_context", "arguments": {}})
    assert_error(response, 503, "database_unavailable")


def test_mcp_tool_call_in_an_outage_is_the_tool_error_database_unavailable(dsh, session, monkeypatch):
    from toolregistry.mcp import server

    monkeypatch.setattr(server, "tool_execute", raise_outage)
    response = Mcp(dsh, session).rpc("tools/call", {"name": "arkme_context", "arguments": {}})
    assert response.status_code == 200, response.content
    assert_tool_error(response.json()["result"], "database_unavailable")


def test_the_join_page_in_an_outage_is_an_html_503(world, monkeypatch):
    from groups import views

    user = get_user_model().objects.create_user("alice-login", password="pw-123456")
    world.alice.user = user
    world.alice.save(update_fields=["user"])
    browser = Client()
    browser.force_login(user)
    monkeypatch.setattr(views, "invitation_for_token", raise_outage)
    response = browser.get("/groups/join/some-token")
    assert response.status_code == 503 and response["Content-Type"].startswith("text/html")
    assert b"Temporarily unavailable" in response.content


@pytest.mark.parametrize("path,json", [("/groups/join/x", False), ("/dsh/v1/sessions", True), ("/readyz", True)])
def test_an_outage_escaping_a_middleware_is_still_the_doors_503(path, json):
    """Django's 500 handler runs inside the ``except`` that caught it (a session saved on the
    way out, after the view)."""
    from toolregistry.api.exceptions import server_error

    request = RequestFactory().get(path)
    try:
        raise refused()
    except OperationalError:
        assert sys.exc_info()[1] is not None
        response = server_error(request)
    if json:
        assert_error(response, 503, "database_unavailable")
    else:
        assert response.status_code == 503 and response["Content-Type"].startswith("text/html")
        assert response["Retry-After"]


def test_database_unavailable_is_in_the_openapi_error_codes(db):
    schema = APIClient().get("/dsh/v1/schema/?format=json").json()
    assert "database_unavailable" in schema["components"]["schemas"]["ErrorCodeEnum"]["enum"]
