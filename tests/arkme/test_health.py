"""The probes: /healthz (the process answers) and /readyz (dependencies, named when failing)."""
from __future__ import annotations

import pytest
from django.test import Client


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
    from arkme.celery import app

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

    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("pending", False)])
    response = probe.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["Migrations"] == "Unavailable: Migrations are not applied."
