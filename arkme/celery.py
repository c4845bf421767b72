"""The Celery application. Task messages are JSON; results are JSON, or msgpack where they carry
bytes (``arkme.kernel.result_store``); tasks run in-process when no broker is configured."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arkme.settings")

app = Celery("arkme")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Results carry blob fingerprints and rendered images: the worker's "succeeded" log line names
# the task, its id and its run time, never the result (Celery would print up to 1 KiB of it).
app.Task.resultrepr_maxsize = 0
# Each task module sits next to what it wraps; all of them are listed here.
app.autodiscover_tasks(["galleries", "galleries.blobs", "groups", "toolregistry"])
app.autodiscover_tasks(["galleries.ingest"], related_name="svg_render")
