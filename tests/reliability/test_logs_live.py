"""What operators read, on README's production stack: every line every process prints (web
access and error logs, gevent, the Celery worker, beat) is one JSON object; a request's lines
carry the id its response carried; no invitation token reaches a log; a 5xx is exactly one
line; and /metrics counts the 5xx under its route and status class."""
from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support import images
from tests.support.errors import Answer, assert_error
from tests.support.live import ROOT

pytestmark = pytest.mark.postgres

METRICS_TOKEN = "metrics-token-for-the-log-test-0123456789"
JOIN_TOKEN = "Zq9xR2mN7vB4kL1pW8sT3yH6dF0gJ5cA-_uE2iO7rK4"  # the shape of an invitation's token
QUERY_SECRET = "apv_query_secret_0123456789abcdef"


def request(port: int, method: str, path: str, body: dict | None = None, headers: dict | None = None,
            ) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(method, path, json.dumps(body) if body is not None else None, headers or {})
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return response.status, {name.lower(): value for name, value in response.getheaders()}, raw


def lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text(errors="replace").splitlines() if line.strip()]


def not_json(lines: list[str]) -> list[str]:
    bad = []
    for line in lines:
        try:
            if not isinstance(json.loads(line), dict):
                bad.append(line)
        except ValueError:
            bad.append(line)
    return bad


def metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_every_line_is_json_with_the_request_id_and_no_secret(production_stack, fault_proxy, tmp_path, figures):
    stack = production_stack()
    (stack.folder / "workspaces" / "demo").mkdir(parents=True, exist_ok=True)
    (stack.folder / "workspaces" / "demo" / "logo.svg").write_bytes(images.svg())
    (stack.folder / "workspaces" / "demo" / "tiny.png").write_bytes(images.png((100, 100)))
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    database = fault_proxy(5432)
    web = stack.web(DATABASE_URL=f"postgres://postgres@127.0.0.1:{database.port}/{stack.database}",
                    PROMETHEUS_MULTIPROC_DIR=str(multiproc), ARKME_METRICS_TOKEN=METRICS_TOKEN)
    worker = stack.worker(queues="celery,render,blobs")
    beat_log = stack.folder / "beat.log"
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "beat", "-l", "info", "--schedule",
         str(stack.folder / "beat-schedule")], cwd=ROOT, env=stack.env, stdout=beat_log.open("ab"),
        stderr=subprocess.STDOUT, start_new_session=True)
    key = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"}
    answered: dict[str, int] = {}  # request id -> status

    def dsh_answer(method: str, path: str, body: dict | None = None) -> Answer:
        status, headers, raw = request(web.port, method, f"/dsh/v1/{path}", body, key)
        answered[headers["x-request-id"]] = status
        return Answer(status, headers, raw)

    def dsh(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        reply = dsh_answer(method, path, body)
        return reply.status_code, json.loads(reply.content) if reply.content else {}

    try:
        status, opened = dsh("POST", "sessions", {"account": stack.world["accounts"]["alice"], "workspace": "demo"})
        assert status == 201, (opened, web.log_text()[-8000:].replace("\\n", "\n"))
        session = opened["session"]
        assert dsh("PUT", f"sessions/{session}/phases/attachments")[0] in (200, 204)
        add = f"sessions/{session}/tools/arkme_extension_preview_add/execute"
        extension = stack.world["extensions"]["alice-ext"]
        status, rendered = dsh("POST", add, {"arguments": {  # an SVG: rendered on the worker
            "action": "prepare", "extension": extension, "source": "workspace", "workspace_paths": ["logo.svg"]}})
        assert status == 200, rendered
        render_request = next(rid for rid, s in reversed(answered.items()) if s == 200)
        dsh("POST", add, {"arguments": {
            "action": "cancel", "extension": extension, "operation": rendered["result"]["operation"]}})
        assert_error(dsh_answer("POST", add, {"arguments": {  # too small: a 422, decoded on the offload threads
            "action": "prepare", "extension": extension, "source": "workspace", "workspace_paths": ["tiny.png"]}}),
            422, "image_dimensions")
        assert_error(dsh_answer("GET", "sessions/no-such-session"), 404, "unknown_session")
        join_status, join_headers, _ = request(web.port, "GET", f"/groups/join/{JOIN_TOKEN}?approval={QUERY_SECRET}")
        answered[join_headers["x-request-id"]] = join_status
        assert join_status < 500
        # A server error: the database goes away under a request that needs it.
        database.down()
        status, failed = dsh("POST", "sessions", {"account": stack.world["accounts"]["alice"]})
        database.up()
        assert status >= 500, failed
        failed_request = next(rid for rid, s in answered.items() if s >= 500)
        status, scrape_headers, scraped = request(web.port, "GET", "/metrics",
                                                  headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert status == 200
        answered[scrape_headers["x-request-id"]] = status
        time.sleep(3)  # beat's first lines
    finally:
        if beat.poll() is None:
            beat.send_signal(signal.SIGTERM)
            beat.wait(timeout=30)
        web.stop()
        worker.stop()

    text = scraped.decode()
    route = "dsh/v1/sessions"
    assert metric(text, "arkme_http_requests_total", method="POST", route=route, status="5xx") == 1, text
    assert metric(text, "arkme_http_requests_total", method="POST", route=route, status="2xx") == 1
    assert metric(text, "arkme_http_requests_total", method="GET", route="dsh/v1/sessions/<str:session>",
                  status="4xx") == 1
    assert metric(text, "arkme_http_requests_total", method="GET", route="groups/join/<str:token>") == 1
    assert not [line for line in text.splitlines() if JOIN_TOKEN in line or session in line]

    logs = {"web": lines_of(web.log), "worker": lines_of(worker.log), "beat": lines_of(beat_log)}
    for name, lines in logs.items():
        assert lines, name
        bad = not_json(lines)
        assert not bad, f"{name} printed lines that are not JSON objects:\n" + "\n".join(bad[:20])
    everything = "\n".join(line for lines in logs.values() for line in lines)
    assert JOIN_TOKEN not in everything and QUERY_SECRET not in everything
    assert stack.key not in everything

    web_lines = [json.loads(line) for line in logs["web"]]
    access = [line for line in web_lines if line.get("logger") == "gunicorn.access"]
    assert {line["request_id"]: line["status"] for line in access} == answered
    assert all(line.get("request_id") for line in web_lines if line.get("logger", "").startswith("django."))
    # The 5xx: one line with its exception, beside its access line; no gevent print.
    about_failure = [line for line in web_lines
                     if line.get("request_id") == failed_request and line.get("logger") != "gunicorn.access"
                     and (line.get("exc_info") or (line.get("status") or 0) >= 500 or line["level"] == "ERROR")]
    assert len(about_failure) == 1, about_failure
    assert about_failure[0]["route"] == route and about_failure[0]["status"] >= 500
    assert not [line for line in web_lines if line.get("logger") == "gevent.hub"]
    # The render ran on the worker under the id of the request that sent it.
    worker_lines = [json.loads(line) for line in logs["worker"]]
    assert [line for line in worker_lines if line.get("request_id") == render_request], logs["worker"][-20:]
    figures.record("logs_live_lines_checked", sum(len(lines) for lines in logs.values()))
    figures.record("logs_live_5xx_log_lines", len(about_failure))
    figures.record("logs_live_5xx_counted", metric(text, "arkme_http_requests_total", status="5xx"))
