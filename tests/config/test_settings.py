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
    script = "import json, config.settings as s; print(json.dumps(s.DATABASES['default'].get('OPTIONS', {})))"
    base = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
    return subprocess.run([sys.executable, "-c", script], env={**base, "DJANGO_SECRET_KEY": "x", **env},
                          cwd=ROOT, capture_output=True, text=True)


def database_options(**env: str) -> dict:
    done = load_settings(**env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


POSTGRES = "postgres://postgres@127.0.0.1:5432/arkme"


def test_postgresql_prepares_repeated_statements_by_default():
    options = database_options(DATABASE_URL=POSTGRES)
    assert (options["server_side_binding"], options["prepare_threshold"]) == (True, 5)
    assert database_options(DATABASE_URL=POSTGRES, DATABASE_PREPARE_THRESHOLD="2")["prepare_threshold"] == 2


def test_a_threshold_of_zero_turns_prepared_statements_off():
    options = database_options(DATABASE_URL=POSTGRES, DATABASE_PREPARE_THRESHOLD="0")
    assert "server_side_binding" not in options and "prepare_threshold" not in options


def database(**env: str) -> dict:
    script = "import json, config.settings as s; print(json.dumps(s.DATABASES['default'], default=str))"
    base = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
    done = subprocess.run([sys.executable, "-c", script], env={**base, "DJANGO_SECRET_KEY": "x", **env},
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_postgresql_connections_come_from_a_pool_that_requests_share():
    """Django's psycopg pool: a request's connection goes back to it at the request's end
    (CONN_MAX_AGE 0, which the pool requires), checked as it is handed out."""
    settings = database(DATABASE_URL=POSTGRES, DATABASE_CONN_MAX_AGE="60")
    assert settings["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 10, "timeout": 10.0, "name": "arkme"}
    assert (settings["CONN_MAX_AGE"], settings["CONN_HEALTH_CHECKS"]) == (0, True)
    # Django's backend, whose pool checks with psycopg's round trip (docs/PERFORMANCE.md).
    assert settings["ENGINE"] == "django.db.backends.postgresql"
    assert settings["OPTIONS"]["prepare_threshold"] == 5  # prepared per pooled connection, kept across requests


def test_the_pool_is_sized_from_the_environment():
    pool = database(DATABASE_URL=POSTGRES, DATABASE_POOL_MIN_SIZE="0", DATABASE_POOL_MAX_SIZE="40",
                    DATABASE_POOL_TIMEOUT="2.5")["OPTIONS"]["pool"]
    assert (pool["min_size"], pool["max_size"], pool["timeout"]) == (0, 40, 2.5)


def test_a_pool_of_size_zero_keeps_connections_per_request_or_by_age():
    settings = database(DATABASE_URL=POSTGRES, DATABASE_POOL_MAX_SIZE="0", DATABASE_CONN_MAX_AGE="60")
    assert "pool" not in settings["OPTIONS"] and settings["CONN_MAX_AGE"] == 60


def test_sqlite_has_no_pool(tmp_path):
    settings = database(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert "pool" not in settings["OPTIONS"] and settings["CONN_MAX_AGE"] == 0


@pytest.mark.parametrize(("env", "says"), [
    ({"DATABASE_POOL_MAX_SIZE": "-1"}, "DATABASE_POOL_MAX_SIZE must be at least 0"),
    ({"DATABASE_POOL_MAX_SIZE": "ten"}, "DATABASE_POOL_MAX_SIZE must be a whole number"),
    ({"DATABASE_POOL_MIN_SIZE": "11"}, "DATABASE_POOL_MIN_SIZE must be at most DATABASE_POOL_MAX_SIZE"),
    ({"DATABASE_POOL_TIMEOUT": "0"}, "DATABASE_POOL_TIMEOUT must be more than 0"),
    ({"DATABASE_POOL_TIMEOUT": "61"}, "DATABASE_POOL_TIMEOUT must be between 0 and 60"),
    ({"DATABASE_POOL_TIMEOUT": "soon"}, "DATABASE_POOL_TIMEOUT must be a number of seconds"),
])
def test_bad_pool_settings_are_configuration_errors(env, says):
    done = load_settings(DATABASE_URL=POSTGRES, **env)
    assert done.returncode != 0 and says in done.stderr


@pytest.mark.parametrize("bad", ["-1", "five"])
def test_a_bad_threshold_is_a_configuration_error(bad):
    done = load_settings(DATABASE_URL=POSTGRES, DATABASE_PREPARE_THRESHOLD=bad)
    assert done.returncode != 0 and "DATABASE_PREPARE_THRESHOLD" in done.stderr


def test_sqlite_has_no_statement_preparation(tmp_path):
    options = database_options(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert "server_side_binding" not in options and "prepare_threshold" not in options


@pytest.mark.parametrize("name,bad", [("DATABASE_CONN_MAX_AGE", "-5"), ("DATABASE_CONN_MAX_AGE", "forever"),
                                      ("ARKME_SVG_TIMEOUT_SECONDS", "0"), ("ARKME_SVG_MEMORY_BYTES", "1024")])
def test_bad_numbers_are_configuration_errors(name, bad):
    done = load_settings(**{name: bad})
    assert done.returncode != 0 and name in done.stderr


def environment_variables_read() -> set[str]:
    """Every variable the settings read (config/settings.py and config/environment.py): os.environ
    look-ups and the env_* helpers."""
    import ast

    names = set()
    sources = [(ROOT / "config" / name).read_text() for name in ("settings.py", "environment.py")]
    for node in (node for source in sources for node in ast.walk(ast.parse(source))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            is_environ_get = isinstance(func, ast.Attribute) and func.attr == "get" and \
                isinstance(func.value, ast.Attribute) and func.value.attr == "environ"
            is_helper = isinstance(func, ast.Name) and func.id.startswith("env_")
            if is_environ_get or is_helper:
                names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "environ" and isinstance(node.slice, ast.Constant):
            names.add(node.slice.value)
    return names


def test_every_variable_the_settings_read_is_in_readmes_configuration():
    names = environment_variables_read()
    assert {"DJANGO_SECRET_KEY", "ARKME_SVG_TIMEOUT_SECONDS", "DATABASE_CONN_MAX_AGE", "DATABASE_POOL_TIMEOUT"} <= names
    readme = (ROOT / "README.md").read_text()
    configuration = readme[readme.index("## Configuration"):readme.index("## ", readme.index("## Configuration") + 3)]
    assert sorted(name for name in names if f"`{name}`" not in configuration) == []


@pytest.mark.postgres
@pytest.mark.django_db
def test_migrate_lifts_the_request_statement_timeout_for_its_connection(postgres):
    from django.apps import apps
    from django.db import connection
    from django.db.models.signals import pre_migrate

    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = '20s'")
        pre_migrate.send(sender=apps.get_app_config("arkme"), app_config=apps.get_app_config("arkme"),
                         verbosity=0, interactive=False, using="default", apps=apps, plan=[])
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"
