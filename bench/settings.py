"""Settings for benchmarks: the project's, a bench-only URL (the bare baseline view), and
state in a temporary folder so a run never touches var/."""
import os
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
_ROOT = Path(os.environ.setdefault("ARKME_BENCH_DIR", tempfile.mkdtemp(prefix="arkme-bench-")))
os.environ.setdefault("ARKME_MEDIA_ROOT", str(_ROOT / "media"))
os.environ.setdefault("ARKME_WORKSPACE_ROOT", str(_ROOT / "workspaces"))
if not os.environ.get("ARKME_BENCH_DATABASE_URL"):
    os.environ["DATABASE_URL"] = f"sqlite:///{_ROOT / 'bench.sqlite3'}"
else:
    os.environ["DATABASE_URL"] = os.environ["ARKME_BENCH_DATABASE_URL"]

from config.settings import *  # noqa: E402, F403

ROOT_URLCONF = "bench.urls"
# The floors' URLconf is chosen per request, before any other middleware runs.
MIDDLEWARE = ["bench.middleware.floors", *MIDDLEWARE]  # noqa: F405
# Collected static files are no part of any figure; an empty folder keeps WhiteNoise quiet.
STATIC_ROOT = _ROOT / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
DEBUG = False
# The floor and bare views are machine paths too: they skip the browser-only middleware
# exactly as the product's paths do, so a ratio never counts it on one side only.
ARKME_MACHINE_PATHS = (*ARKME_MACHINE_PATHS, "/bench/")  # noqa: F405
ALLOWED_HOSTS = ["*"]
LOGGING = {"version": 1, "disable_existing_loggers": True, "root": {"level": "ERROR"}}
