"""Production settings: `check --deploy` is clean when the environment says how it is served."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_SECRET_KEY": "x" * 20 + "-production-like-secret-key-with-enough-entropy-0123456789",
    "DJANGO_ALLOWED_HOSTS": "registry.example",
    "DJANGO_SSL_REDIRECT": "1",
    "DJANGO_HSTS_SECONDS": "31536000",
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_HSTS_PRELOAD": "1",
    "DJANGO_BEHIND_PROXY": "1",
}


def check_deploy(extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARKME_", "CELERY_"))}
    env.update(extra)
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_with_production_settings():
    run = check_deploy(PRODUCTION)
    assert run.returncode == 0, run.stdout + run.stderr


def test_check_deploy_names_what_is_missing():
    run = check_deploy({**PRODUCTION, "DJANGO_HSTS_SECONDS": "0", "DJANGO_SSL_REDIRECT": "0"})
    assert run.returncode != 0
    assert "security.W004" in run.stdout + run.stderr and "security.W008" in run.stdout + run.stderr


def test_probes_are_not_redirected_to_https(client, settings, db):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/dsh/v1/catalog").status_code == 301
