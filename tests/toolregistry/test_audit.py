"""The audit written with its call: every row durable before its call answers, nothing held in
memory, a write's row before its effect, and on PostgreSQL an asynchronous commit."""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from arkme.accounts import adapters
from arkme.accounts.models import Account
from tests.support.errors import assert_error
from toolregistry import audit
from toolregistry.audit import IN_PROGRESS, INTERRUPTED, INTERRUPTED_AFTER, outcome_seen
from toolregistry.models import ToolCall


def rows() -> list[tuple[str, str, int]]:
    return list(ToolCall.objects.order_by("id").values_list("tool_name", "outcome", "http_status"))


# --- a read, a refusal, a replay: one row, written before the answer -------------------------

def test_a_reads_row_is_in_the_table_when_the_call_answers(dsh, session):
    response = dsh.execute(session, "arkme_context", {})
    assert response.status_code == 200
    assert rows() == [("arkme_context", "ok", 200)]


def test_refusals_are_written_once_each_with_their_code(dsh, session):
    dsh.execute(session, "arkme_nothing", {})
    dsh.execute(session, "arkme_context", {"verbose": True})
    dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_new"})  # no approval: refused in the call
    assert rows() == [("arkme_nothing", "unknown_tool", 404), ("arkme_context", "invalid_arguments", 400),
                      ("arkme_id_change", "approval_required", 403)]


def test_a_replay_is_one_row_and_runs_no_write(dsh, session):
    arguments = {"arkme_id": "alice_2026"}
    first = dsh.approve_and_execute(session, "arkme_id_change", arguments, HTTP_IDEMPOTENCY_KEY="k")
    again = dsh.execute(session, "arkme_id_change", arguments, approval="apv_spent", HTTP_IDEMPOTENCY_KEY="k")
    assert first.status_code == again.status_code == 200
    assert list(ToolCall.objects.order_by("id").values_list("outcome", "replayed")) == [("ok", False), ("ok", True)]


def test_a_call_whose_row_cannot_be_written_fails_and_nothing_is_held(dsh, session, monkeypatch):
    """The database refusing the row is the call's error (answered as an outage), not a row
    kept in memory for later: there is no later."""
    def refused(row):
        raise OperationalError("the database is gone")

    monkeypatch.setattr(audit, "insert_row", refused)
    response = dsh.execute(session, "arkme_context", {})
    assert_error(response, 503, "database_unavailable")
    assert not hasattr(audit, "writer")
    assert rows() == []


# --- a write: its row before its effect, its ending before its answer ------------------------

def test_a_writes_row_is_in_progress_while_its_effect_runs(dsh, session, monkeypatch):
    seen = []
    change = adapters.AccountAdapter.change_arkme_id

    def watched(self, **kwargs):
        seen.append(rows())
        return change(self, **kwargs)

    monkeypatch.setattr(adapters.AccountAdapter, "change_arkme_id", watched)
    response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"})
    assert response.status_code == 200
    assert seen == [[("arkme_id_change", IN_PROGRESS, 0)]]
    assert rows() == [("arkme_id_change", "ok", 200)]


def test_a_write_whose_row_cannot_be_begun_changes_nothing(dsh, session, monkeypatch, world):
    def refused(**kwargs):
        raise OperationalError("the database is gone")

    from toolregistry import execution

    monkeypatch.setattr(execution, "tool_call_begin", refused)
    response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"})
    assert_error(response, 503, "database_unavailable")
    assert not Account.objects.filter(arkme_id="alice_2026").exists()


def test_a_write_whose_ending_cannot_be_written_answers_its_result(dsh, session, monkeypatch, caplog):
    """Its effect committed and its row exists: answering an error would invite the effect
    again. The row stays ``in_progress`` (an interrupted call) and the failure is logged."""
    def refused(call, **kwargs):
        raise OperationalError("the database is gone")

    from toolregistry import execution

    monkeypatch.setattr(execution, "tool_call_end", refused)
    with caplog.at_level(logging.ERROR, logger="toolregistry.execution"):
        response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"})
    assert response.status_code == 200
    assert Account.objects.filter(arkme_id="alice_2026").exists()
    assert rows() == [("arkme_id_change", IN_PROGRESS, 0)]
    assert "could not be ended" in caplog.text


def test_a_write_that_fails_unexpectedly_ends_its_row_as_a_server_error(dsh, session, monkeypatch):
    def boom(self, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(adapters.AccountAdapter, "change_arkme_id", boom)
    dsh.api.raise_request_exception = False
    response = dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"})
    assert_error(response, 500, "internal_error")
    assert rows() == [("arkme_id_change", "server_error", 500)]


def test_an_in_progress_row_is_interrupted_once_no_call_could_still_be_running():
    now = timezone.now()
    assert outcome_seen(IN_PROGRESS, now - timedelta(seconds=30), now) == IN_PROGRESS
    assert outcome_seen(IN_PROGRESS, now - INTERRUPTED_AFTER - timedelta(seconds=1), now) == INTERRUPTED
    assert outcome_seen("ok", now - timedelta(days=1), now) == "ok"


# --- PostgreSQL: the row's own commit is asynchronous ----------------------------------------

def statements_of(call) -> list[str]:
    seen: list[str] = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        call()
    return seen


def synchronous_commit_after(sql: str, params) -> str:
    """What ``synchronous_commit`` is at the end of ``sql``'s transaction, seen in an explicit
    one (rolled back) so the statement's own local setting is still in force."""
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
        try:
            cursor.execute(sql, params)
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]
        finally:
            cursor.execute("ROLLBACK")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_rows_statement_commits_asynchronously_on_postgresql(postgres, world):
    """In autocommit the statement is its own transaction, and the commit follows the setting in
    effect when it commits: the statement sets it off for its own transaction only."""
    from arkme.conversations.models import AgentSession
    from tests.support.dsh import make_dsh

    dsh = make_dsh()
    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])

    def record():
        audit.tool_call_record(session=session, tool_name="arkme_context", tool_id="arkme.context@1", outcome="ok",
                               http_status=200, duration_ms=1, replayed=False)

    def begin_and_end():
        call = audit.tool_call_begin(session=session, tool_name="arkme_id_change", tool_id="arkme.id.change@1")
        audit.tool_call_end(call, outcome="ok", http_status=200, duration_ms=3)

    written = statements_of(record) + statements_of(begin_and_end)
    assert len(written) == 3
    assert all("set_config('synchronous_commit', 'off', true)" in sql for sql in written)
    assert ToolCall.objects.count() == 3 - 1
    assert set(ToolCall.objects.values_list("outcome", "http_status")) == {("ok", 200)}
    # The setting holds for the statement's transaction, and the connection's own is untouched.
    row = audit._row(session, "arkme_context", "arkme.context@1", "ok", 200, 1, False, audit.Surface.REST)
    assert synchronous_commit_after(written[0], row) == "off"
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


@pytest.mark.postgres
def test_a_row_written_inside_a_transaction_commits_with_it(postgres, world, dsh):
    """The declined approval's row joins its voiding's transaction, which keeps its own,
    synchronous, commit."""
    from arkme.conversations.models import AgentSession

    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])
    written = statements_of(lambda: audit.tool_call_record(
        session=session, tool_name="arkme_context", tool_id="", outcome="ok", http_status=200, duration_ms=1,
        replayed=False))
    assert len(written) == 1 and "synchronous_commit" not in written[0]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


def test_the_staff_list_shows_a_row_left_in_progress_as_interrupted(dsh, session):
    from django.contrib.admin.sites import site

    from toolregistry.admin import OutcomeFilter, ToolCallAdmin

    dsh.execute(session, "arkme_context", {})
    ToolCall.objects.update(outcome=IN_PROGRESS, http_status=0)
    call = ToolCall.objects.get()
    shown = ToolCallAdmin(ToolCall, site)
    assert shown.result(call) == IN_PROGRESS  # it may still be running
    ToolCall.objects.update(created_at=timezone.now() - INTERRUPTED_AFTER - timedelta(minutes=1))
    call = ToolCall.objects.get()
    assert shown.result(call) == INTERRUPTED
    interrupted = OutcomeFilter(None, {"outcome": [INTERRUPTED]}, ToolCall, shown)
    assert list(interrupted.queryset(None, ToolCall.objects.all())) == [call]
    ok = OutcomeFilter(None, {"outcome": ["ok"]}, ToolCall, shown)
    assert list(ok.queryset(None, ToolCall.objects.all())) == []
