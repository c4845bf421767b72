"""Probes for orchestrators: ``/healthz`` (the process answers) and ``/readyz`` (every
dependency a request needs is reachable and the schema is migrated).

``/readyz`` runs django-health-check's probes plus two of ours: the task broker and result
store (only when a broker is configured) and pending migrations. It answers JSON, naming each
check with "OK" or why it failed, with 200 or 503; never a secret, URL or credential.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
from concurrent.futures import Executor
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from health_check.base import HealthCheck  # type: ignore[import-untyped]
from health_check.exceptions import ServiceUnavailable  # type: ignore[import-untyped]
from health_check.views import HealthCheckView  # type: ignore[import-untyped]
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from .celery import app
from .kernel.offload import os_thread_executor


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
    """Every migration is applied: a new release's code does not serve an old schema."""

    def run(self) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        try:
            executor = MigrationExecutor(connection)
            if executor.migration_plan(executor.loader.graph.leaf_nodes()):
                raise ServiceUnavailable("Migrations are not applied.")
        finally:
            # This runs on an executor's thread, which no request ends: nothing else closes it.
            connection.close()


class ReadinessView(HealthCheckView):
    def get_checks(self) -> Any:
        checks: list[Any] = ["health_check.checks.Database", ("health_check.checks.Storage", {"alias": "blobs"}),
                             Migrations]
        if settings.CELERY_BROKER_URL:
            checks += [TaskBroker, ResultStore]
        self.checks = checks
        return super().get_checks()

    def get_executor(self) -> contextlib.AbstractContextManager[Executor | None]:
        return os_thread_executor()

    def render_to_response_json(self, status: int) -> JsonResponse:
        checks = {result.check.__class__.__name__: "OK" if not result.error else str(result.error)
                  for result in self.results}
        ready = all(value == "OK" for value in checks.values())
        return JsonResponse({"status": "ready" if ready else "unavailable", "checks": checks},
                            status=200 if ready else 503)

    async def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Always JSON: run the checks as the library does, without rendering its other formats.
        with self.get_executor() as executor:
            self.results = await asyncio.gather(*(check.get_result(executor) for check in self.get_checks()))
        return self.render_to_response_json(200)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and answers; nothing else is touched, so it stays cheap."""
    return JsonResponse({"status": "ok"})
