"""Hostile SVG renders on README's production stack: one account's renders slow only that
account, and no render runs for a caller that already has its 503.

The workers run as the Procfile runs them (its queues and concurrency). The SVG is valid and
small but costs cairo seconds (finely dashed rings); an agent can write one into its own
workspace.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support import images
from tests.support.errors import Answer, assert_error
from tests.support.live import ROOT
from tests.support.stack import Stack, Web

pytestmark = [pytest.mark.postgres]

ADD = "arkme_extension_preview_add"
RENDERED = re.compile(r"galleries\.render_svg\[[0-9a-f-]+\] succeeded")
DISCARDED = re.compile(r"Discarding revoked task: galleries\.render_svg\[")


def hostile_svg(rings: int) -> bytes:
    """Valid, 60-70 bytes a ring, about 10 ms of cairo's time a ring."""
    body = "".join(f'<circle cx="500" cy="500" r="{100 + i}" fill="none" stroke="red" stroke-width="1" '
                   f'stroke-dasharray="0.02 0.02"/>' for i in range(rings))
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1000 1000">{body}</svg>'.encode()


def procfile_workers(env: dict[str, str]) -> list[tuple[str, str | None, int]]:
    """The Procfile's Celery workers: name, queues (-Q) and concurrency (Celery's default, the
    CPU count, where the line sets none)."""
    workers = []
    for line in (ROOT / "Procfile").read_text().splitlines():
        if ": " not in line or line.startswith("#"):
            continue
        name, command = line.split(": ", 1)
        if not re.search(r"celery .*\bworker\b", command):
            continue
        queues = re.search(r"(?:-Q|--queues)[ =](\S+)", command)
        concurrency = re.search(r"(?:-c|--concurrency)[ =](?:\$\{(\w+):-(\d+)\}|(\d+))", command)
        if concurrency is None:
            count = os.cpu_count() or 1
        elif concurrency.group(1):
            count = int(env.get(concurrency.group(1)) or concurrency.group(2))
        else:
            count = int(concurrency.group(3))
        workers.append((name, queues.group(1) if queues else None, count))
    return workers


def start_workers(stack: Stack, **env: str) -> list[Any]:
    return [stack.worker(queues=queues, concurrency=count, **env)
            for _, queues, count in procfile_workers({**stack.env, **env})]


def call(web: Web, method: str, path: str, body: dict | None = None) -> tuple[int, dict[str, str], dict]:
    """One DSH API call: status, headers and the decoded body."""
    connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=90)
    connection.request(method, f"/dsh/v1/{path}", json.dumps(body) if body is not None else None,
                       {"Authorization": f"Bearer {web.key}", "Content-Type": "application/json"})
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(raw) if raw else {}


def open_session(stack: Stack, web: Web, account: str, files: dict[str, bytes]) -> str:
    workspace = f"ws-{account}"
    folder = stack.folder / "workspaces" / workspace
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    status, _, opened = call(web, "POST", "sessions", {"account": stack.world["accounts"][account],
                                                       "workspace": workspace})
    assert status == 201, opened
    session = opened["session"]
    call(web, "PUT", f"sessions/{session}/phases/attachments")
    return session


def prepare(web: Web, session: str, extension: str, path: str) -> tuple[float, int, dict[str, str], dict]:
    """A prepare: seconds it took, status, headers, body."""
    began = time.monotonic()
    status, headers, body = call(web, "POST", f"sessions/{session}/tools/{ADD}/execute", {"arguments": {
        "action": "prepare", "extension": extension, "source": "workspace", "workspace_paths": [path]}})
    return time.monotonic() - began, status, headers, body


def cancel(web: Web, session: str, extension: str, operation: str) -> None:
    status, _, body = call(web, "POST", f"sessions/{session}/tools/{ADD}/execute", {"arguments": {
        "action": "cancel", "extension": extension, "operation": operation}})
    assert status == 200, body


def add_to_gallery(web: Web, session: str, extension: str, path: str, message: str) -> dict:
    """Prepare, the human's 确认 (message id ``message``), confirm: the confirm's result."""
    _, status, _, prepared = prepare(web, session, extension, path)
    assert status == 200, prepared
    assert call(web, "POST", f"sessions/{session}/messages", {"id": message, "text": "确认"})[0] == 201
    status, _, confirmed = call(web, "POST", f"sessions/{session}/tools/{ADD}/execute", {"arguments": {
        "action": "confirm", "extension": extension, "operation": prepared["result"]["operation"]}})
    assert status == 200, confirmed
    return confirmed["result"]


def worker_logs(workers: list[Any]) -> str:
    return "\n".join(worker.log_text() for worker in workers)


def test_one_accounts_hostile_renders_do_not_hold_up_another_accounts_add(production_stack, figures):
    stack = production_stack()
    web = stack.web()
    workers = start_workers(stack)
    alice_ext, bob_ext = stack.world["extensions"]["alice-ext"], stack.world["extensions"]["bob-ext"]
    alice = open_session(stack, web, "alice", {"hostile.svg": hostile_svg(350), "small.svg": images.svg()})
    bob = open_session(stack, web, "bob", {"warm.png": images.png((400, 400), (10, 120, 200)),
                                           "plain.png": images.png((400, 400), (200, 30, 90))})
    # Warm: each kind of work once, so first-use costs are not counted below.
    warm = prepare(web, alice, alice_ext, "small.svg")
    assert warm[1] == 200, warm
    cancel(web, alice, alice_ext, warm[3]["result"]["operation"])
    began = time.monotonic()
    assert add_to_gallery(web, bob, bob_ext, "warm.png", "m1")["added"] == 1
    quiet_add = time.monotonic() - began
    # One hostile render alone, through the product: what each of alice's costs.
    alone = prepare(web, alice, alice_ext, "hostile.svg")
    assert alone[1] in (200, 422), alone
    render_seconds = alone[0]
    if alone[1] == 200:
        cancel(web, alice, alice_ext, alone[3]["result"]["operation"])

    hostile: list[tuple[float, int, dict[str, str], dict]] = []
    bob_seconds: list[float] = []

    def bob_adds() -> None:
        time.sleep(0.5)  # alice's renders are in flight
        started = time.monotonic()
        assert add_to_gallery(web, bob, bob_ext, "plain.png", "m2")["added"] == 1
        bob_seconds.append(time.monotonic() - started)

    beside = threading.Thread(target=bob_adds)
    with ThreadPoolExecutor(5) as pool:
        calls = [pool.submit(prepare, web, alice, alice_ext, "hostile.svg") for _ in range(5)]
        beside.start()
        hostile = [call.result() for call in calls]
    beside.join(120)

    figures.record("render_isolation_hostile_render_seconds", round(render_seconds, 2))
    figures.record("render_isolation_other_account_add_quiet_seconds", round(quiet_add, 2))
    assert bob_seconds, "bob's add failed:\n" + web.log_text()[-3000:]
    figures.record("render_isolation_other_account_add_seconds", round(bob_seconds[0], 2))
    # Bob's add is not queued behind alice's renders: well below one of them.
    assert bob_seconds[0] < max(3.0, render_seconds / 2), (bob_seconds, render_seconds, hostile)

    refused = [answer for answer in hostile if answer[1] == 429]
    accepted = [answer for answer in hostile if answer[1] != 429]
    figures.record("render_isolation_refused_of_5", len(refused))
    # Two renders in flight for alice (ARKME_SVG_RENDERS_PER_ACCOUNT); the rest refused at once.
    assert len(accepted) == 2 and all(status in (200, 422) for _, status, _, _ in accepted), hostile
    assert len(refused) == 3, hostile
    for seconds, status, headers, body in refused:
        assert_error(Answer(status, headers, body), 429, "throttled")  # with its Retry-After
        assert seconds < max(2.0, render_seconds / 4), (seconds, render_seconds)
    figures.record("render_isolation_refusal_seconds_max", round(max(answer[0] for answer in refused), 2))
    # Rendered: the warm-up, the one alone, alice's two; none for a refused call. (A worker
    # logs a task's end just after its caller has the answer.)
    deadline = time.monotonic() + 15
    while len(RENDERED.findall(worker_logs(workers))) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    assert len(RENDERED.findall(worker_logs(workers))) == 1 + 1 + 2, worker_logs(workers)[-4000:]


def test_no_render_runs_after_its_caller_got_its_503(production_stack, figures):
    # A short request budget and one render process: of four renders, the later ones cannot
    # finish in time for their callers.
    stack = production_stack(ARKME_REQUEST_BUDGET_SECONDS="6")
    web = stack.web()
    workers = start_workers(stack, ARKME_RENDER_CONCURRENCY="1")
    svg = hostile_svg(450)
    alice = open_session(stack, web, "alice", {"hostile.svg": svg})
    bob = open_session(stack, web, "bob", {"hostile.svg": svg})
    targets = [(alice, stack.world["extensions"]["alice-ext"]), (bob, stack.world["extensions"]["bob-ext"])] * 2
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda target: prepare(web, target[0], target[1], "hostile.svg"), targets))
    answered = time.monotonic()
    gave_up = [answer for answer in answers if answer[1] == 503]
    assert gave_up, answers
    for _, status, headers, body in gave_up:
        assert_error(Answer(status, headers, body), 503, "task_queue_unavailable")
    assert all(seconds < 6 + 3 for seconds, _, _, _ in answers), answers  # within the budget
    # Whatever a worker still held for those callers ends with them: none renders later.
    time.sleep(1.5)
    settled = len(RENDERED.findall(worker_logs(workers)))
    time.sleep(max(0.0, answered + 15 - time.monotonic()))
    late = len(RENDERED.findall(worker_logs(workers))) - settled
    figures.record("render_deadline_callers_503", len(gave_up))
    figures.record("render_deadline_renders_after_503", late)
    figures.record("render_deadline_discarded_expired", len(DISCARDED.findall(worker_logs(workers))))
    assert late == 0, worker_logs(workers)[-4000:]
