"""Settings read from the environment."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_settings(**env: str) -> subprocess.CompletedProcess:
    """Import the settings in a fresh interpreter with only these DATABASE_* variables."""
    script = "import json, arkme.settings as s; print(json.dumps(s.DATABASES['default'].get('OPTIONS', {})))"
    base = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
    return subprocess.run([sys.executable, "-c", script], env={**base, "DJANGO_SECRET_KEY": "x", **env},
                          cwd=ROOT, capture_output=True, text=True)


def database_options(**env: str) -> dict:
    done = load_settings(**env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


POSTGRES = "postgres://postgres@127.0.0.1:5432/arkme"


def test_postgresql_prepares_repeated_statements_by_default():
    assert database_options(DATABASE_URL=POSTGRES) == {"server_side_binding": True, "prepare_threshold": 5}
    assert database_options(DATABASE_URL=POSTGRES, DATABASE_PREPARE_THRESHOLD="2")["prepare_threshold"] == 2


def test_a_threshold_of_zero_turns_prepared_statements_off():
    assert database_options(DATABASE_URL=POSTGRES, DATABASE_PREPARE_THRESHOLD="0") == {}


@pytest.mark.parametrize("bad", ["-1", "five"])
def test_a_bad_threshold_is_a_configuration_error(bad):
    done = load_settings(DATABASE_URL=POSTGRES, DATABASE_PREPARE_THRESHOLD=bad)
    assert done.returncode != 0 and "DATABASE_PREPARE_THRESHOLD" in done.stderr


def test_sqlite_has_no_statement_preparation(tmp_path):
    options = database_options(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert "server_side_binding" not in options and "prepare_threshold" not in options
