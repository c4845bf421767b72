"""gunicorn with 2 workers on PostgreSQL, and a load generator on loopback: requests per
second of the session view and of arkme_group_member_candidates, against the bare DRF view
under the same load."""
from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .common import Result, free_port, wait_for_port

CONNECTIONS = 8
SECONDS = 2.0  # one window; each target gets ROUNDS windows, interleaved with the others
ROUNDS = 4
ROOT = Path(__file__).resolve().parent.parent


def load(port: int, method: str, path: str, body: bytes | None, headers: dict) -> tuple[int, float]:
    """Requests completed over keep-alive connections in SECONDS, and the seconds taken."""
    done = [0] * CONNECTIONS
    stop = time.monotonic() + SECONDS

    def worker(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while time.monotonic() < stop:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, response.status
            done[index] += 1
        connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(CONNECTIONS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done), time.monotonic() - started


def interleaved(port: int, targets: dict[str, tuple]) -> dict[str, float]:
    """Requests per second of each target, measured in alternating windows so that drift in
    the machine's speed falls on all of them alike."""
    totals = {name: [0, 0.0] for name in targets}
    for _ in range(ROUNDS):
        for name, target in targets.items():
            count, seconds = load(port, *target)
            totals[name][0] += count
            totals[name][1] += seconds
    return {name: count / seconds for name, (count, seconds) in totals.items()}


def run() -> Result:
    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.sessions import session_open
    from groups.models import Group, Membership
    from groups.services import private_chat_ensure

    client, key = dsh_client_create(name="bench-throughput")
    me = Account.objects.create(display_name="Throughput")
    group = Group.objects.create(name="throughput")
    Membership.objects.create(group=group, account=me)
    for i in range(60):
        private_chat_ensure(a=me, b=Account.objects.create(display_name=f"Friend {i}"))
    session = session_open(client=client, account=me.public_id).public_id
    from groups.refs import make_source_ref
    source_ref = make_source_ref(account_public_id=me.public_id, group_public_id=group.public_id)

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "arkme.wsgi", "--workers", "2", "--bind", f"127.0.0.1:{port}",
         "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "DATABASE_CONN_MAX_AGE": "60"},
    )
    try:
        wait_for_port(port, server, seconds=30)
        auth = {"Authorization": f"Bearer {key}", "Host": "127.0.0.1"}
        post = {**auth, "Content-Type": "application/json"}
        body = json.dumps({"arguments": {"source_ref": source_ref}}).encode()
        candidates_path = f"/dsh/v1/sessions/{session}/tools/arkme_group_member_candidates/execute"
        targets = {
            "bare": ("GET", f"/bench/bare/{session}", None, auth),
            "view": ("GET", f"/dsh/v1/sessions/{session}", None, auth),
            "candidates": ("POST", candidates_path, body, post),
            "floor": ("POST", f"/bench/floor/{session}/candidates", body, post),
        }
        for target in targets.values():  # warm-up: connections opened, statements prepared
            load(port, *target)
        rps = interleaved(port, targets)
        bare, view, candidates, floor = (rps[name] for name in ("bare", "view", "candidates", "floor"))
    finally:
        server.terminate()
        server.wait(timeout=20)
    worst = min(view, candidates) / bare
    return Result("api_throughput", round(worst, 3), "× bare view (the lower of the two)",
                  "the bare DRF view under the same load", "≥ 0.5×", worst >= 0.5,
                  {"bare_rps": round(bare), "session_view_rps": round(view), "candidates_rps": round(candidates),
                   "session_view_ratio": round(view / bare, 3), "candidates_ratio": round(candidates / bare, 3),
                   "candidates_floor_rps": round(floor), "candidates_floor_ratio": round(floor / bare, 3),
                   "candidates_of_floor": round(candidates / floor, 3)})
