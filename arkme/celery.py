"""The Celery application. JSON only; tasks run in-process when no broker is configured."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arkme.settings")

app = Celery("arkme")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["galleries", "groups", "toolregistry"])
