"""gunicorn's configuration for the web process: ``gunicorn arkme.wsgi -c gunicorn.conf.py``.

The worker timeout stays above ``ARKME_REQUEST_BUDGET_SECONDS`` (25 by default), the most a
request waits on tasks, so a slow queue answers a JSON 503 instead of a killed worker. The
workers are threaded (gthread): keep-alive connections, and a thread waiting on a task does
not hold a whole process. WEB_CONCURRENCY (gunicorn's own variable) sets the process count.
"""
bind = "127.0.0.1:8000"
worker_class = "gthread"
workers = 2
threads = 4
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
