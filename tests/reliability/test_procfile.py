"""The Procfile's processes (web, worker, render, beat) as README's production section runs
them: PostgreSQL, Redis as the broker, S3 (moto) for blobs, and one gallery flow through them."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support import images
from tests.support.live import call, free_port, gallery_add, listening, wait_until_listening
from tests.support.services import require_service

pytestmark = [pytest.mark.postgres, pytest.mark.s3, pytest.mark.celery_worker]
ROOT = Path(__file__).resolve().parents[2]
BROKER = "redis://127.0.0.1:6379/13"
POSTGRES = os.environ.get("DATABASE_URL", "") if os.environ.get("DATABASE_URL", "").startswith("postgres") \
    else "postgres://postgres@127.0.0.1:5432/postgres"


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def _admin(sql: str) -> None:
    import psycopg

    parts = urlsplit(POSTGRES)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(sql)


@pytest.fixture
def deployment(tmp_path, moto_endpoint):
    require_service("PostgreSQL", listening(5432), "PostgreSQL on 127.0.0.1:5432")
    require_service("Redis", listening(6379), "redis-server on 127.0.0.1:6379")
    import boto3
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    database, bucket = f"arkme_procfile_{os.getpid()}", f"arkme-procfile-{uuid.uuid4().hex[:10]}"
    _admin(f"DROP DATABASE IF EXISTS {database}")
    _admin(f"CREATE DATABASE {database}")
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARKME_", "CELERY_", "DATABASE_"))}
    env.update({
        "DATABASE_URL": urlunsplit(urlsplit(POSTGRES)._replace(path=f"/{database}")), "DATABASE_CONN_MAX_AGE": "60",
        "DJANGO_SECRET_KEY": "procfile-test-secret-key", "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_COOKIES": "0", "CELERY_BROKER_URL": BROKER,
        "ARKME_STORAGE": "s3", "ARKME_S3_BUCKET": bucket, "ARKME_S3_ENDPOINT_URL": moto_endpoint,
        "ARKME_S3_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
        "ARKME_WORKSPACE_ROOT": str(tmp_path / "workspaces"), "ARKME_MEDIA_ROOT": str(tmp_path / "media"),
        "ARKME_BEAT_SCHEDULE": str(tmp_path / "beat-schedule"), "PORT": str(free_port()),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    })
    def manage(*args: str) -> subprocess.CompletedProcess:
        ran = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=300)
        assert ran.returncode == 0, ran.stderr[-3000:]
        return ran

    manage("migrate", "--noinput", "-v0")
    processes: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}
    for name, command in procfile().items():
        logs[name] = tmp_path / f"{name}.log"
        processes[name] = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=ROOT, env=env,
                                           stdout=logs[name].open("wb"), stderr=subprocess.STDOUT,
                                           start_new_session=True)
    try:
        wait_until_listening(int(env["PORT"]), processes["web"], lambda: logs["web"].read_text()[-2000:])
        # The demo stores its images through the task queue: the worker must be up.
        world = json.loads(manage("arkme_demo", "--json", "--force").stdout)
        yield world, env, processes, logs, s3, bucket
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        _admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_web_workers_and_beat_run_a_gallery_flow_together(deployment):
    world, env, processes, logs, s3, bucket = deployment
    port, key = int(env["PORT"]), world["dsh_key"]
    workspace = Path(env["ARKME_WORKSPACE_ROOT"]) / "procfile"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "shot.png").write_bytes(images.png((400, 400), (10, 120, 200)))
    status, _, opened = call(port, key, "POST", "sessions", {"account": world["accounts"]["alice"], "workspace": "procfile"})
    assert status == 201, opened
    session = opened["session"]
    call(port, key, "PUT", f"sessions/{session}/phases/attachments")
    extension = world["extensions"]["alice-ext"]
    assert gallery_add(port, key, session, extension, ["shot.png"])["added"] == 1
    stored = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert any(key.startswith("blobs/") for key in stored), stored
    # The blob was stored by the worker process, not in the web process.
    deadline = time.monotonic() + 10
    while "galleries.store_blobs" not in logs["worker"].read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert re.search(r"Task galleries\.store_blobs\[[^\]]+\] succeeded", logs["worker"].read_text())
    assert "beat: Starting" in logs["beat"].read_text()
    assert all(process.poll() is None for process in processes.values()), {
        name: logs[name].read_text()[-1000:] for name, process in processes.items() if process.poll() is not None}
    # Drawings rendered by the render worker (a queue of its own), two prepares at once (an
    # account's renders in flight) in the one web process.
    (workspace / "drawing.svg").write_bytes(images.svg())
    add = f"sessions/{session}/tools/arkme_extension_preview_add/execute"
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: call(port, key, "POST", add, {"arguments": {
            "action": "prepare", "extension": extension, "source": "workspace",
            "workspace_paths": ["drawing.svg"]}}), range(2)))
    assert [status for status, _, _ in answers] == [200] * 2, answers
    assert re.search(r"Task galleries\.render_svg\[[^\]]+\] succeeded", logs["render"].read_text())
    assert not re.search(r"Task galleries\.render_svg\[[^\]]+\] received", logs["worker"].read_text())
    assert not re.search(r"Task galleries\.store_blobs?\[[^\]]+\] received", logs["render"].read_text())
    # A graceful stop is clean: nothing the last requests left behind fails as the worker exits.
    os.killpg(processes["web"].pid, signal.SIGTERM)
    assert processes["web"].wait(timeout=30) == 0
    assert "Traceback" not in logs["web"].read_text(), logs["web"].read_text()[-3000:]
