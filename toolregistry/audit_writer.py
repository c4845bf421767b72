"""The tool-call audit written behind the calls: a call hands over its row and answers, and a
thread of the process inserts what has gathered, many rows in one transaction.

Why: served by gunicorn, the audit row's INSERT and commit cost about a quarter of a cheap
call's CPU (250 µs of about 1,050, on SQLite and on PostgreSQL alike): a round trip with a
commit per call and a hand-off of the GIL each way, more than the tool, its argument
validation and the JSON-RPC framing together. Gathered, a window's rows cost one round trip
and one commit (docs/PERFORMANCE.md, ``mcp_call``).

What it costs: a row reaches the table up to ``ARKME_AUDIT_WRITE_BEHIND_SECONDS`` after its
call answered. A process that exits (gunicorn's graceful stop and restart, a management
command, the end of a test run) writes what it holds first; one killed outright (SIGKILL,
the OOM killer, gunicorn's worker timeout) loses the rows of its last window. Every other
failure keeps the rows:

- a row written inside a transaction joins that transaction, so it commits or rolls back
  with the work it audits (the declined approval's row is written with its voiding);
- while the database refuses the batch (down, locked, a broken connection), the rows wait
  and are tried again, and once ``MAX_PENDING`` wait, each call writes its own row as
  before, so a call fails when its audit cannot be written rather than memory growing;
- a row whose session was deleted before the batch reached the table is written without
  the link, as ``SET_NULL`` would have left it (it still names the session by public id);
  a row that breaks a constraint even so could never be written: it is logged and dropped,
  so it does not hold up the rows behind it. A failure partway through those one-by-one
  writes holds again only the rows not yet written.

``ARKME_AUDIT_WRITE_BEHIND_SECONDS=0`` writes every row before its call answers. The audit
(``toolregistry.audit``) owns the statement and the process's writer.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction

logger = logging.getLogger(__name__)

Row = Sequence[Any]
# The rows a process may hold before calls write their own again: about a second of a busy
# worker, a few hundred kilobytes.
MAX_PENDING = 5000
# After a failed batch, the wait before the next try doubles, within these.
MIN_RETRY_SECONDS, MAX_RETRY_SECONDS = 0.1, 5.0


class AuditWriter:
    """Gathers rows and writes them with ``write(rows)``, which inserts them all or raises.
    ``link`` is the index of the value a deleted parent row may have left dangling.

    One per process: the thread starts with the first row held (in the worker, after
    gunicorn forks) and a forked child starts empty, so no row is written twice."""

    def __init__(self, write: Callable[[Sequence[Row]], None], *, window: Callable[[], float],
                 link: int = 0, max_pending: int = MAX_PENDING) -> None:
        self._write = write
        self._link = link
        self._window = window
        self.max_pending = max_pending
        self._reset()
        # Weakly: a writer that is gone (a test's) must not be kept alive by the hook.
        reset = weakref.WeakMethod(self._reset)
        os.register_at_fork(after_in_child=lambda: (method := reset()) and method())

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._rows: deque[Row] = deque()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._flushing = threading.Lock()

    def add(self, row: Row) -> None:
        """Hold ``row`` for the next batch, or write it now (see the module's docstring)."""
        if self._window() <= 0 or connection.in_atomic_block:
            self._write([row])
            return
        with self._lock:
            if len(self._rows) < self.max_pending and not self._stopping:
                self._rows.append(row)
                if self._thread is None:
                    self._start()
                elif len(self._rows) == 1:
                    self._wake.notify()
                return
        self._write([row])

    @property
    def pending(self) -> int:
        return len(self._rows)

    def flush(self) -> int:
        """Write every row held now; returns how many were taken. On a database error the rows
        not yet written are held again, in order, and the error is raised."""
        with self._flushing:
            with self._lock:
                rows = list(self._rows)
                self._rows.clear()
            if not rows:
                return 0
            try:
                with transaction.atomic():
                    self._write(rows)
            except IntegrityError:
                # One row broke a constraint (its session was deleted meanwhile): write them one
                # by one, so that the others are kept and only that row loses its link.
                self._write_each(rows)
            except BaseException:
                self._hold_again(rows)
                raise
            return len(rows)

    def _hold_again(self, rows: list[Row]) -> None:
        with self._lock:
            self._rows.extendleft(reversed(rows))

    def close(self) -> None:
        """Stop the thread and write what is held (at exit)."""
        with self._lock:
            self._stopping = True
            thread = self._thread
            self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        try:
            self.flush()
        except DatabaseError:
            logger.exception("audit rows could not be written at exit", extra={"rows": self.pending})
        finally:
            connection.close()

    def _write_each(self, rows: list[Row]) -> None:
        for index, row in enumerate(rows):
            try:
                self._write_one(row)
            except BaseException:
                self._hold_again(rows[index:])  # the rows before it are written
                raise

    def _write_one(self, row: Row) -> None:
        try:
            with transaction.atomic():
                self._write([row])
            return
        except IntegrityError:
            unlinked = list(row)
            unlinked[self._link] = None
        try:
            with transaction.atomic():
                self._write([unlinked])
        except IntegrityError:
            # Not a deleted parent: no later try could write it, and holding it would stop every
            # row behind it.
            logger.exception("an audit row broke a constraint and was dropped")

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="arkme-audit-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        retry = 0.0
        while True:
            with self._lock:
                while not self._rows and not self._stopping:
                    self._wake.wait()
                # Let the window's rows gather; only a stop ends the wait early.
                deadline = time.monotonic() + max(self._window(), retry)
                while not self._stopping and (left := deadline - time.monotonic()) > 0:
                    self._wake.wait(timeout=left)
                if self._stopping:
                    return
            try:
                self.flush()
                retry = 0.0
            except DatabaseError:
                retry = min(MAX_RETRY_SECONDS, max(2 * retry, self._window(), MIN_RETRY_SECONDS))
                logger.warning("audit rows could not be written; trying again in %.1f s", retry, exc_info=True,
                               extra={"rows": self.pending})
                connection.close()
            except Exception:  # a bug must not end the thread and leave rows unwritten for good
                logger.exception("the audit writer failed; trying again")
                retry = MAX_RETRY_SECONDS
