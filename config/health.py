"""Probes for orchestrators: ``/healthz`` (the process answers) and ``/readyz`` (every
dependency a request needs is reachable and the schema is migrated).

``/readyz`` runs django-health-check's database and storage checks plus ours: the task broker
and result store (only when a broker is configured) and pending migrations. It answers JSON,
naming each check with "OK" or why it failed, with 200 or 503; never a secret, URL or
credential.

The view is a plain synchronous one, the same under gevent's workers, runserver's threads and
the test client: no event loop and no asgiref, which promise nothing under gevent. Each check
runs on a thread of its own (a greenlet under gevent), so the checks run side by side and the
probe waits for each at most its ``timeout``; a check still running then is reported as timed
out and left to end by its client's own timeout, never interrupted (interrupting a wait inside
psycopg's pool can lose a connection). That thread's database connection is its own and is
closed, back to the pool, when the check ends: a probe never touches the connection of the
request that serves it, nor of any other.

A check runs at most once at a time in a process: a probe arriving while it runs waits for
that run's outcome instead of starting another, so any number of probes at once costs the
dependencies what one costs, takes at most one pooled connection per database check, and a
hanging dependency holds one thread per check, not one per probe.
"""
from __future__ import annotations

import dataclasses
import datetime
import inspect
import logging
import os
import threading
import time
import typing

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from health_check.base import HealthCheck  # type: ignore[import-untyped]
from health_check.checks import Database, Storage  # type: ignore[import-untyped]
from health_check.exceptions import HealthCheckException, ServiceUnavailable  # type: ignore[import-untyped]
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from .celery import app

logger = logging.getLogger(__name__)

OK = "OK"


@dataclasses.dataclass
class TaskBroker(HealthCheck):
    """The broker accepts a connection (one try, two seconds)."""

    timeout = datetime.timedelta(seconds=3)

    def run(self) -> None:
        try:
            with app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=2)
        except (OperationalError, OSError) as exc:
            raise ServiceUnavailable("The task broker cannot be reached.") from exc


@dataclasses.dataclass
class ResultStore(HealthCheck):
    """The result store answers (tasks' answers wait there for the web request)."""

    timeout = datetime.timedelta(seconds=3)

    def run(self) -> None:
        backend = app.backend
        try:
            client = getattr(backend, "client", None)
            if client is not None:
                client.ping()  # Redis
            else:
                with app.connection_for_read() as connection:  # rpc:// answers over the broker
                    connection.ensure_connection(max_retries=1, timeout=2)
        except (OperationalError, OSError, RuntimeError, RedisError) as exc:
            raise ServiceUnavailable("The task result store cannot be reached.") from exc


@dataclasses.dataclass
class Migrations(HealthCheck):
    """Every migration is applied: a new release's code does not serve an old schema.

    Once they are, the process's code has nothing more to apply, so the check is not made
    again: loading the migration graph costs more CPU than the rest of a probe together."""

    applied: typing.ClassVar[bool] = False

    def run(self) -> None:
        if Migrations.applied:
            return
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            raise ServiceUnavailable("Migrations are not applied.")
        Migrations.applied = True


def readiness_checks() -> list[HealthCheck]:
    checks: list[HealthCheck] = [Database(), Storage(alias="blobs"), Migrations()]
    if settings.CELERY_BROKER_URL:
        checks += [TaskBroker(), ResultStore()]
    return checks


class _Run:
    """One run of one check: its outcome once ``done`` is set."""

    def __init__(self, check: HealthCheck) -> None:
        self.check = check
        self.started = time.monotonic()
        self.done = threading.Event()
        self.outcome = ""

    def __call__(self) -> None:
        try:
            self.check.run()
            self.outcome = OK
        except HealthCheckException as error:
            self.outcome = str(error)
        except Exception:
            logger.exception("readiness check %s failed unexpectedly", type(self.check).__name__)
            self.outcome = str(HealthCheckException("unknown error"))  # the error's text may name a host
        finally:
            # This thread's own connections: no request ends here to close them.
            connections.close_all()
            with _lock:
                if _running.get(type(self.check).__name__) is self:
                    del _running[type(self.check).__name__]
            self.done.set()

    def wait(self) -> str:
        seconds = self.check.timeout.total_seconds()
        if self.done.wait(max(0.0, self.started + seconds - time.monotonic())):
            return self.outcome
        return f"Unavailable: Timed out after {seconds:g} seconds"


_lock = threading.Lock()
_running: dict[str, _Run] = {}


def _forget_runs() -> None:
    global _lock
    _lock = threading.Lock()
    _running.clear()  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_runs)


def _start(check: HealthCheck) -> _Run:
    """The check's run under way in this process, or a new one started on its own thread."""
    if inspect.iscoroutinefunction(check.run):
        raise TypeError(f"{type(check).__name__}.run is a coroutine; readiness runs synchronous checks only")
    name = type(check).__name__
    with _lock:
        run = _running.get(name)
        if run is not None:
            return run
        run = _running[name] = _Run(check)
    threading.Thread(target=run, name=f"readyz-{name}", daemon=True).start()
    return run


def run_checks(checks: list[HealthCheck]) -> dict[str, str]:
    """Each check's name with "OK" or why it failed, within each check's timeout."""
    runs = [_start(check) for check in checks]
    return {type(run.check).__name__: run.wait() for run in runs}


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when every dependency answers, else 503; always JSON, whatever the Accept header."""
    checks = run_checks(readiness_checks())
    ready = all(outcome == OK for outcome in checks.values())
    return JsonResponse({"status": "ready" if ready else "unavailable", "checks": checks},
                        status=200 if ready else 503)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and answers; nothing else is touched, so it stays cheap."""
    return JsonResponse({"status": "ok"})
