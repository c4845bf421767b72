"""The audit written behind the calls: rows are held for a window and written together, and no
failure short of a killed process loses one."""
from __future__ import annotations

import os
import threading

import pytest
from django.db import DatabaseError, IntegrityError, transaction

from arkme.conversations.models import AgentSession
from toolregistry import audit
from toolregistry.audit_writer import AuditWriter
from toolregistry.models import ToolCall

# Outside a test's transaction, as a served call is: inside one, every row is written at once.
pytestmark = pytest.mark.django_db(transaction=True)


class Table:
    """A stand-in for the INSERT: records each batch, or fails as told."""

    def __init__(self) -> None:
        self.batches: list[list[tuple]] = []
        self.fail_with: Exception | None = None
        self.written = threading.Event()

    def write(self, rows) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.batches.append([tuple(row) for row in rows])
        self.written.set()


def held(table: Table, window: float = 10, **options) -> AuditWriter:
    return AuditWriter(table.write, window=lambda: window, **options)


def test_rows_wait_for_the_window_and_are_written_in_one_batch():
    table = Table()
    writer = held(table, window=0.05)
    for n in range(3):
        writer.add((n,))
    assert table.written.wait(timeout=30)
    assert table.batches == [[(0,), (1,), (2,)]]
    assert writer.pending == 0
    writer.close()


def test_a_row_is_held_until_the_window_ends():
    table = Table()
    writer = held(table)
    writer.add(("a",))
    assert table.batches == [] and writer.pending == 1
    assert writer.flush() == 1
    assert table.batches == [[("a",)]]
    writer.close()


def test_no_window_writes_each_row_before_add_returns():
    table = Table()
    writer = held(table, window=0)
    writer.add(("a",))
    assert table.batches == [[("a",)]] and writer.pending == 0


def test_past_the_limit_a_call_writes_its_own_row():
    table = Table()
    writer = held(table, max_pending=2)
    for row in ("a", "b", "c"):
        writer.add((row,))
    assert table.batches == [[("c",)]] and writer.pending == 2
    writer.close()
    assert table.batches[-1] == [("a",), ("b",)]


def test_a_failed_batch_keeps_its_rows_in_order_for_the_next():
    table = Table()
    writer = held(table)
    writer.add(("a",))
    writer.add(("b",))
    table.fail_with = DatabaseError("the database is down")
    with pytest.raises(DatabaseError):
        writer.flush()
    writer.add(("c",))
    assert writer.pending == 3
    table.fail_with = None
    writer.flush()
    assert table.batches == [[("a",), ("b",), ("c",)]]
    writer.close()


def test_the_thread_tries_again_after_a_failure():
    table = Table()
    writer = held(table, window=0.01)
    table.fail_with = DatabaseError("the database is down")
    writer.add(("a",))
    table.fail_with = None  # the thread's first try may already have failed; a later one succeeds
    assert table.written.wait(timeout=30)
    assert table.batches == [[("a",)]]
    writer.close()


def test_close_writes_what_is_held_and_later_rows_are_written_at_once():
    table = Table()
    writer = held(table)
    writer.add(("a",))
    writer.close()
    assert table.batches == [[("a",)]]
    writer.add(("b",))
    assert table.batches == [[("a",)], [("b",)]]


def test_a_forked_child_holds_none_of_its_parents_rows():
    table = Table()
    writer = held(table)
    writer.add(("a",))
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os._exit(0 if writer.pending == 0 else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert writer.pending == 1
    writer.close()


def test_inside_a_transaction_the_row_joins_it():
    table = Table()
    writer = held(table)
    with transaction.atomic():
        writer.add(("a",))
        assert table.batches == [[("a",)]]
    writer.add(("b",))
    assert writer.pending == 1
    writer.close()


def test_a_served_call_answers_first_and_its_row_follows(settings, dsh, world):
    settings.ARKME_AUDIT_WRITE_BEHIND_SECONDS = 10
    session = dsh.open_session(world.alice)["session"]
    response = dsh.execute(session, "arkme_context", {}, HTTP_X_REQUEST_ID="behind-1")
    assert response.status_code == 200
    assert not ToolCall.objects.filter(request_id="behind-1").exists()
    assert audit.writer.flush() >= 1
    row = ToolCall.objects.get(request_id="behind-1")
    assert (row.session.public_id, row.tool_name, row.outcome, row.http_status, row.surface) == (
        session, "arkme_context", "ok", 200, "rest")


def test_a_row_whose_session_was_deleted_is_kept_without_the_link(settings, dsh, world):
    settings.ARKME_AUDIT_WRITE_BEHIND_SECONDS = 10
    kept, gone = (dsh.open_session(account)["session"] for account in (world.alice, world.bob))
    for session in (kept, gone):
        assert dsh.execute(session, "arkme_context", {}).status_code == 200
    AgentSession.objects.filter(public_id=gone).delete()
    assert audit.writer.flush() == 2
    rows = {row.session_public_id: row.session_id for row in ToolCall.objects.all()}
    assert rows[gone] is None
    assert rows[kept] == AgentSession.objects.get(public_id=kept).pk


class Constrained:
    """An INSERT that refuses any batch holding a row whose first value is "dangling" or
    "broken", and goes down once it has taken ``down_after`` rows."""

    def __init__(self) -> None:
        self.written: list[tuple] = []
        self.down_after: int | None = None

    def write(self, rows) -> None:
        if self.down_after is not None and len(self.written) >= self.down_after:
            raise DatabaseError("the database went away")
        if any(row[0] in ("dangling", "broken") for row in rows):
            raise IntegrityError("a constraint")
        self.written.extend(tuple(row) for row in rows)


def test_a_row_that_breaks_a_constraint_even_unlinked_is_dropped_and_costs_the_others_nothing():
    table = Constrained()
    writer = AuditWriter(table.write, window=lambda: 10, link=1)  # unlinking leaves "broken" broken
    for row in (("ok", 1), ("broken", 2), ("late", 3)):
        writer.add(row)
    assert writer.flush() == 3
    assert table.written == [("ok", 1), ("late", 3)]
    assert writer.pending == 0
    writer.close()


def test_a_dangling_link_is_written_without_it():
    table = Constrained()
    writer = AuditWriter(table.write, window=lambda: 10, link=0)
    writer.add(("ok", 1))
    writer.add(("dangling", 2))
    writer.flush()
    assert table.written == [("ok", 1), (None, 2)]
    writer.close()


def test_a_failure_while_writing_one_by_one_holds_only_the_rows_not_written():
    table = Constrained()
    writer = AuditWriter(table.write, window=lambda: 10, link=0)
    for row in (("a", 1), ("dangling", 2), ("b", 3), ("c", 4)):
        writer.add(row)
    table.down_after = 2  # "a" and the unlinked row go in one by one, then the database goes
    with pytest.raises(DatabaseError):
        writer.flush()
    assert table.written == [("a", 1), (None, 2)]
    assert writer.pending == 2
    table.down_after = None
    writer.flush()
    assert table.written == [("a", 1), (None, 2), ("b", 3), ("c", 4)]
    writer.close()
