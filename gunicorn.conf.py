"""gunicorn's configuration for the web process: ``gunicorn arkme.wsgi -c gunicorn.conf.py``.

The worker timeout stays above ``ARKME_REQUEST_BUDGET_SECONDS`` (25 by default), the most a
request waits on tasks, so a slow queue answers a JSON 503 instead of a killed worker.

The workers are gevent's: each process serves its connections from one thread, switching
between requests whenever one waits on the network, the database or a task, so a request
waiting on a task holds a greenlet rather than a thread, and keep-alive connections cost no
hand-off between threads per request (docs/PERFORMANCE.md, ``mcp_call``). Decoding and
encoding images, the one long stretch of work without a wait, runs on a few real threads
(``arkme.kernel.offload``). WEB_CONCURRENCY (gunicorn's own variable) sets the process count.
"""
import gevent
from gunicorn.workers.ggevent import GeventWorker


class Worker(GeventWorker):
    """gunicorn's gevent worker, taking turns between connections and closing the database
    connections a client connection's requests opened when it ends. Django keeps one
    connection per thread, here per greenlet, and a greenlet that ends takes no request's end
    with it to close its connection: without this, every client connection would leave one
    open until the process exits."""

    def handle_request(self, listener_name, req, sock, addr):
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            # Between two requests of a keep-alive connection, let the process's other
            # connections have their turn: on a fast client the next request is often in the
            # socket already, and reading it would not wait, so one connection could keep the
            # process to itself while the others' requests queue.
            gevent.sleep(0)

    def handle(self, listener, client, addr):
        try:
            super().handle(listener, client, addr)
        finally:
            from django.db import connections

            connections.close_all()


bind = "127.0.0.1:8000"
worker_class = Worker
# The most connections a process serves at once. Each holds at most one database connection
# while it lasts (DATABASE_CONN_MAX_AGE keeps it for the connection's next requests), so
# workers × (worker_connections + 1, the audit writer's) must stay below PostgreSQL's
# max_connections: 2 × 33 here, against its default 100.
worker_connections = 32
workers = 2
timeout = 30
graceful_timeout = 30
keepalive = 5
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'
# The proxy in front terminates TLS; X-Forwarded-* is trusted from it only (DJANGO_BEHIND_PROXY).
forwarded_allow_ips = "127.0.0.1"


def child_exit(server, worker):
    """With PROMETHEUS_MULTIPROC_DIR set, a dead worker's live gauges stop counting."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def worker_exit(server, worker):
    """Collect what the last requests left while the worker's greenlets can still run: Celery's
    task results unsubscribe when collected, which fails once gevent is finalizing them."""
    import gc

    gc.collect()
