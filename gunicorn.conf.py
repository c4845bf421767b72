"""gunicorn's configuration for the web process: ``gunicorn config.wsgi -c gunicorn.conf.py``.

The worker timeout stays above ``ARKME_REQUEST_BUDGET_SECONDS`` (25 by default), the most a
request waits on tasks, so a slow queue answers a JSON 503 instead of a killed worker.

The workers are gevent's: each process serves its connections from one thread, switching
between requests whenever one waits on the network, the database or a task, so a request
waiting on a task holds a greenlet rather than a thread, and keep-alive connections cost no
hand-off between threads per request (docs/PERFORMANCE.md, ``mcp_call``). Decoding and
encoding images, the one long stretch of work without a wait, runs on a few real threads
(``arkme.kernel.offload``). WEB_CONCURRENCY (gunicorn's own variable) sets the process count.

What a client connection costs is a greenlet and a file descriptor, nothing more: database
connections belong to requests, taken from the process's pool at a request's first query and
given back when it ends (``DATABASE_POOL_*``, config/settings.py). So a process holds thousands
of idle or slow keep-alive connections (``worker_connections``) while its working requests
share the pool, and no idle client takes capacity from a working one.
"""
import resource
import sys

import gevent
from gunicorn.workers.ggevent import GeventWorker


class Worker(GeventWorker):
    """gunicorn's gevent worker, taking turns between connections and giving back, after each
    request, any database connection its greenlet still holds."""

    def patch(self):
        # Django keeps each thread's database connection in a threading.local made when
        # django.db is first imported. Imported in the master, before gevent patched this
        # process, that local is the one real thread's, shared by every greenlet: every request
        # of the process would share one connection, and locks made then would block the whole
        # process. So nothing of the application may be imported in the master (this file, a
        # logger_class, a hook at module level); refuse to serve rather than serve that way.
        early = sorted(name for name in ("django.db", "config.settings") if name in sys.modules)
        if early:
            raise RuntimeError(f"{', '.join(early)} imported in gunicorn's master before gevent patched the "
                               "worker; import the application only inside hooks that run in the worker")
        super().patch()

    def handle_request(self, listener_name, req, sock, addr):
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            # Django gives a request's connection back to the pool when the response is closed
            # (request_finished). A connection opened after that (a request_finished receiver's
            # query) or by a request whose response never reached close() would otherwise stay
            # with this greenlet while its client sits idle on the keep-alive connection.
            from django.db import connections

            connections.close_all()
            # Between two requests of a keep-alive connection, let the process's other
            # connections have their turn: on a fast client the next request is often in the
            # socket already, and reading it would not wait, so one connection could keep the
            # process to itself while the others' requests queue.
            gevent.sleep(0)


def _open_files(wanted: int) -> int:
    """The process's open-file limit, raised towards ``wanted`` as far as the hard limit allows
    (the workers inherit it): every client connection is a file descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return wanted if soft == resource.RLIM_INFINITY else soft


# Descriptors a worker needs besides its clients: the database pool, Redis, the render
# processes' pipes, log files, libraries.
RESERVED_FILES = 256
CLIENT_CONNECTIONS = 4096

bind = "127.0.0.1:8000"
worker_class = Worker
# The client connections a process holds at once, idle keep-alive ones included; each costs a
# greenlet and a descriptor, none a database connection (those are DATABASE_POOL_MAX_SIZE per
# process: workers × that, plus the Celery workers', must stay below PostgreSQL's
# max_connections). Past this many, new connections wait in the listen backlog. Cut to what
# the open-file limit allows when its hard limit is lower.
worker_connections = max(64, min(CLIENT_CONNECTIONS, _open_files(CLIENT_CONNECTIONS + RESERVED_FILES) - RESERVED_FILES))
workers = 2
timeout = 30
graceful_timeout = 30
# Seconds an idle keep-alive connection (or a request head still arriving) is held before it is
# closed. Short, because a graceful stop waits for idle clients too: it ends within this, not
# within graceful_timeout. Behind a load balancer that keeps idle connections to the backend
# longer, set it (--keep-alive) above the balancer's idle timeout, or the balancer may send a
# request on a connection being closed.
keepalive = 5
accesslog = "-"
errorlog = "-"
# Access and error lines are JSON, with the request id and the path redacted (no invitation
# token in a log): serverlog.web.
logger_class = "serverlog.web.JsonLogger"
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


def post_worker_init(worker):
    """gevent's hub reports a greenlet's unhandled exception as one JSON log line, not a
    traceback printed to stderr (serverlog.web)."""
    from serverlog.web import install_logging_hub

    install_logging_hub()
