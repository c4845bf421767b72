"""The kernel stands below every domain and the composition root: importing it loads neither
``config`` nor a Celery app (a task module binds to whichever app the process made)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# A fresh interpreter with Django's own apps only (the browser middleware imports
# django.contrib.auth, which needs a loaded app registry), not the project's settings.
IMPORT_THE_KERNEL = """
import importlib, json, pkgutil, sys

import django
from django.conf import settings

settings.configure(INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes",
                                   "django.contrib.sessions", "django.contrib.messages"])
django.setup()

import arkme.kernel

names = [info.name for info in pkgutil.iter_modules(arkme.kernel.__path__, "arkme.kernel.")]
for name in names:
    importlib.import_module(name)

from celery import _state

print(json.dumps({
    "kernel": names,
    "config": sorted(m for m in sys.modules if m == "config" or m.startswith("config.")),
    "above": sorted(m for m in sys.modules if m.split(".")[0] in ("toolregistry", "galleries", "groups")),
    "celery_apps": [app.main for app in _state._get_active_apps()],
}))
"""


def test_importing_every_kernel_module_loads_no_composition_root_and_no_celery_app():
    environment = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", IMPORT_THE_KERNEL], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert {"arkme.kernel.tasking", "arkme.kernel.errors", "arkme.kernel.slots"} <= set(loaded["kernel"])
    assert loaded["config"] == []
    assert loaded["above"] == []
    assert loaded["celery_apps"] == []
