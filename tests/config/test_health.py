"""The probes: /healthz (the process answers) and /readyz (dependencies, named when failing)."""
from __future__ import annotations

import datetime
import threading
import time

import pytest
from django.test import Client
from health_check.base import HealthCheck

from config import health


@pytest.fixture
def probe():
    return Client()


def test_healthz_answers_without_touching_anything(probe, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = probe.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db(transaction=True)
def test_readyz_is_ready_when_every_dependency_answers(probe):
    response = probe.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ready", "checks": {"Database": "OK", "Storage": "OK", "Migrations": "OK"}}


@pytest.mark.django_db(transaction=True)
def test_readyz_names_unreachable_storage(probe, settings):
    broken = {"BACKEND": "storages.backends.s3.S3Storage",
              "OPTIONS": {"bucket_name": "nowhere", "endpoint_url": "http://127.0.0.1:9", "region_name": "us-east-1"}}
    settings.STORAGES = {**settings.STORAGES, "blobs": broken}
    response = probe.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["Storage"] != "OK" and checks["Database"] == "OK"
    assert "127.0.0.1" not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_readyz_names_an_unreachable_broker_and_result_store(probe, settings):
    from config.celery import app

    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    previous = app.conf.broker_url, app.conf.result_backend
    app.conf.broker_url = app.conf.result_backend = "redis://127.0.0.1:1/0"
    try:
        response = probe.get("/readyz")
    finally:
        app.conf.broker_url, app.conf.result_backend = previous
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["TaskBroker"] == "Unavailable: The task broker cannot be reached."
    assert checks["ResultStore"] != "OK"
    assert "127.0.0.1:1" not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_readyz_names_unapplied_migrations(probe, monkeypatch):
    from django.db.migrations.executor import MigrationExecutor

    monkeypatch.setattr(health.Migrations, "applied", False)
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("pending", False)])
    response = probe.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["Migrations"] == "Unavailable: Migrations are not applied."


@pytest.mark.django_db(transaction=True)
def test_readyz_answers_json_whatever_the_client_accepts(probe):
    response = probe.get("/readyz", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db(transaction=True)
def test_readyz_leaves_the_connection_of_the_request_serving_it_alone(probe, django_assert_num_queries):
    """The checks run on threads of their own, with connections of their own."""
    with django_assert_num_queries(0):
        assert probe.get("/readyz").status_code == 200


class Slow(HealthCheck):
    """A check that waits until the test lets it go, counting its runs."""

    timeout = datetime.timedelta(seconds=0.2)
    runs = 0
    release = threading.Event()

    def run(self) -> None:
        type(self).runs += 1
        type(self).release.wait(30)


@pytest.fixture
def slow():
    Slow.runs, Slow.release = 0, threading.Event()
    yield Slow
    Slow.release.set()
    deadline = time.monotonic() + 10
    while "Slow" in health._running and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_check_past_its_timeout_is_named_and_not_started_again_while_it_runs(slow):
    assert health.run_checks([Slow()]) == {"Slow": "Unavailable: Timed out after 0.2 seconds"}
    assert health.run_checks([Slow()]) == {"Slow": "Unavailable: Timed out after 0.2 seconds"}
    assert Slow.runs == 1  # a hanging dependency holds one thread, not one per probe
    Slow.release.set()
    deadline = time.monotonic() + 10
    while "Slow" in health._running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert health.run_checks([Slow()]) == {"Slow": "OK"} and Slow.runs == 2


def test_probes_at_once_share_one_run_of_each_check(slow):
    Slow.timeout = datetime.timedelta(seconds=20)
    try:
        answers: list[dict[str, str]] = []
        probes = [threading.Thread(target=lambda: answers.append(health.run_checks([Slow()]))) for _ in range(8)]
        for thread in probes:
            thread.start()
        time.sleep(0.3)
        Slow.release.set()
        for thread in probes:
            thread.join(30)
    finally:
        del Slow.timeout
    assert answers == [{"Slow": "OK"}] * 8
    assert Slow.runs == 1


def test_an_unexpected_error_is_named_without_its_text(caplog):
    class Broken(HealthCheck):
        def run(self) -> None:
            raise RuntimeError("postgres://user:secret@db.internal")

    assert health.run_checks([Broken()]) == {"Broken": "Unknown Error: unknown error"}
    assert "Broken" in caplog.text


def test_a_coroutine_check_is_refused():
    class Async(HealthCheck):
        async def run(self) -> None:
            return None

    with pytest.raises(TypeError, match="synchronous checks only"):
        health.run_checks([Async()])


@pytest.mark.django_db(transaction=True)
def test_migrations_once_applied_are_not_loaded_again(monkeypatch):
    from django.db.migrations.executor import MigrationExecutor

    monkeypatch.setattr(health.Migrations, "applied", False)
    assert health.run_checks([health.Migrations()]) == {"Migrations": "OK"}
    monkeypatch.setattr(MigrationExecutor, "__init__", lambda *args: pytest.fail("loaded again"))
    assert health.run_checks([health.Migrations()]) == {"Migrations": "OK"}
