"""Django's PostgreSQL backend whose connection pool checks a connection without a round trip
when nothing says it ended.

With ``CONN_HEALTH_CHECKS`` Django has psycopg's pool check every connection as it hands it
out, with an empty query: a round trip on every request that uses the database, about 100 µs of
a web process's CPU and a statement's worth of the server's (docs/PERFORMANCE.md). It is what
keeps a connection PostgreSQL ended while it sat in the pool (a restart, an administrator,
``idle_session_timeout``) from failing the next request. PostgreSQL says goodbye when it ends
a connection: an error message, then the end of the stream. So a connection idle and in good
order with nothing waiting on its socket is handed out as it is, and any other goes through
the pool's own check, which finds it ended and opens another
(``tests/reliability/test_pool_checks.py``). A connection whose server vanished without a word
(the network cut) is found either way only when a statement waits out ``tcp_user_timeout``.
"""
from __future__ import annotations

import select
import sys
from typing import Any, Callable

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg import Connection, pq
from psycopg_pool import ConnectionPool

_WAITING = select.POLLIN | select.POLLPRI


def _system_poll() -> Callable[[], Any]:
    """``select.poll`` as the system gives it: one system call. Under gevent (the web workers)
    the module's is gevent's, which starts a watcher and takes a turn of its hub's loop even
    when asked not to wait."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None:
        return monkey.get_original("select", "poll")
    return select.poll


def _anything_waiting(fd: int) -> bool:
    poller = _system_poll()()
    poller.register(fd, _WAITING)
    return bool(poller.poll(0))  # POLLHUP and POLLERR are reported whatever was asked


def check_unless_quiet(conn: Connection[Any]) -> None:
    """The pool's check as it hands ``conn`` out: ``ConnectionPool.check_connection`` (an
    empty query) unless the connection is idle, in good order, and nothing waits on its socket."""
    pgconn = conn.pgconn
    if (pgconn.status == pq.ConnStatus.OK and pgconn.transaction_status == pq.TransactionStatus.IDLE
            and not _anything_waiting(pgconn.socket)):
        return
    ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> ConnectionPool[Any] | None:
        """Django's pool, with ``check_unless_quiet`` as its check when ``CONN_HEALTH_CHECKS``
        asks for checks (Django names psycopg's own there, and takes no other)."""
        pool_options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not pool_options:
            return None
        # Django's own names, as its property uses them (docs/ARCHITECTURE.md, "Private internals
        # kept"): the pools by alias, which close_pool() empties, and the connection's set-up.
        pools: dict[str, ConnectionPool[Any]] = self._connection_pools  # type: ignore[attr-defined]
        if self.alias not in pools:
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # as Django's: it sets the mode itself later
            pool = ConnectionPool(
                kwargs=connect_kwargs,
                open=False,  # opened by the first connection, as Django's
                configure=self._configure_connection,  # type: ignore[attr-defined]
                check=check_unless_quiet if self.settings_dict["CONN_HEALTH_CHECKS"] else None,
                **({} if pool_options is True else pool_options),
            )
            # The first pool made for the alias wins, as in Django's.
            pools.setdefault(self.alias, pool)
        return pools[self.alias]
