"""The Celery app: JSON task messages, late acknowledgement, and every scheduled task registered."""
from __future__ import annotations

from django.conf import settings

from config.celery import app


def test_json_only_and_acks_late():
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late is True and app.conf.task_reject_on_worker_lost is True


def test_every_periodic_task_is_registered():
    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, entry["task"]


def test_tasks_run_in_process_without_a_broker():
    assert settings.CELERY_BROKER_URL is None and settings.CELERY_TASK_ALWAYS_EAGER is True
