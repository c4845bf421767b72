"""Outages on the production stack are 503s that heal.

PostgreSQL behind a fault proxy goes down, then hangs, under a few clients: every door (the DSH
REST API, its MCP endpoint, the readiness probe, the join page) answers its 503
``database_unavailable`` within the request budget, never a 500, and answers as before once the
database is back, with nothing restarted. A hanging S3 is ``503 storage_unavailable`` within the
budget, whether a Celery worker or the web process itself stores the blob."""
from __future__ import annotations

import http.client
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

import boto3
import pytest

from tests.support import images
from tests.support.live import gallery_add
from tests.support.stack import SilentServer

pytestmark = [pytest.mark.postgres]
BUDGET = 25  # ARKME_REQUEST_BUDGET_SECONDS's default
MARGIN = 15  # a loaded machine
CLIENTS = 4
# Twice what a request waits for a pooled connection (DATABASE_POOL_TIMEOUT, 10 s), so that
# requests start and end inside the outage.
OUTAGE_SECONDS = 22


@dataclass
class Answer:
    door: str
    status: int  # 0: no answer (the connection dropped)
    content_type: str
    body: bytes
    started: float
    seconds: float

    @property
    def code(self) -> str | None:
        """The error's code: the envelope's, or an MCP tool error's (its structured content)."""
        try:
            body = json.loads(self.body)
            if isinstance(body.get("result"), dict) and body["result"].get("isError"):
                return body["result"]["structuredContent"]["error"]["code"]
            return body["error"]["code"]
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
            door: str = "") -> Answer:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BUDGET + 3 * MARGIN)
    try:
        connection.request(method, path, body, headers or {})
        response = connection.getresponse()
        answer = Answer(door, response.status, response.getheader("Content-Type", ""), response.read(), started, 0)
    except (OSError, http.client.HTTPException):
        answer = Answer(door, 0, "", b"", started, 0)
    finally:
        connection.close()
    answer.seconds = time.monotonic() - started
    return answer


class Doors:
    """Each door of one web node, and what it answers when all is well."""

    NORMAL = {"rest": 200, "mcp": 200, "readyz": 200, "join": 410}  # the join page's bogus token: 410

    def __init__(self, port: int, stack) -> None:
        self.port, self.key = port, stack.key
        status, opened = self._json("POST", "/dsh/v1/sessions", {"account": stack.world["accounts"]["alice"]})
        assert status == 201, opened
        self.session = opened["session"]
        self.cookie = self._login("alice", stack.world["logins"]["alice"])

    def _json(self, method: str, path: str, body: dict) -> tuple[int, dict]:
        answer = request(self.port, method, path, json.dumps(body).encode(), self._bearer())
        return answer.status, json.loads(answer.body or b"{}")

    def _bearer(self) -> dict:
        return {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}

    def _login(self, username: str, password: str) -> str:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request("GET", "/accounts/login/")
        response = connection.getresponse()
        page = response.read()
        cookie = response.getheader("Set-Cookie").split(";")[0]
        csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        form = f"username={username}&password={password}&csrfmiddlewaretoken={csrf}"
        connection.request("POST", "/accounts/login/", form, {
            "Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie})
        response = connection.getresponse()
        response.read()
        assert response.status == 302, response.status
        session = next(part.split(";")[0] for part in response.getheader("Set-Cookie").split(", ")
                       if part.startswith("sessionid="))
        connection.close()
        return session

    def rest(self) -> Answer:
        return request(self.port, "POST", f"/dsh/v1/sessions/{self.session}/tools/arkme_context/execute",
                       json.dumps({"arguments": {}}).encode(), self._bearer(), "rest")

    def mcp(self) -> Answer:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "arkme_context", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}
        return request(self.port, "POST", f"/dsh/v1/sessions/{self.session}/mcp", json.dumps(body).encode(), {
            **self._bearer(), "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call", "Mcp-Name": "arkme_context"}, "mcp")

    def readyz(self) -> Answer:
        return request(self.port, "GET", "/readyz", door="readyz")

    def join(self) -> Answer:
        return request(self.port, "GET", "/groups/join/not-a-token", headers={"Cookie": self.cookie}, door="join")

    def all(self) -> list:
        return [self.rest, self.mcp, self.readyz, self.join]

    @classmethod
    def normal(cls, answer: Answer) -> bool:
        if answer.status != cls.NORMAL[answer.door]:
            return False
        if answer.door == "mcp":  # a tool call that answered, not a tool error
            return not json.loads(answer.body)["result"].get("isError")
        return True

    @staticmethod
    def unavailable(answer: Answer) -> bool:
        """The door's 503: JSON with database_unavailable (the probe: any JSON), a page for a person.
        Over MCP, a call whose database went away after the door had read the session (one that
        began just before the fault) answers the same refusal as a tool error."""
        if answer.door == "mcp" and answer.status == 200:
            return answer.code == "database_unavailable"
        if answer.status != 503:
            return False
        if answer.door == "join":
            return answer.content_type.startswith("text/html")
        if not answer.content_type.startswith("application/json"):
            return False
        return answer.door == "readyz" or answer.code == "database_unavailable"


def proxied(database_url: str, port: int) -> str:
    parts = urlsplit(database_url)
    return parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}").geturl()


def hammer(doors: Doors, stop: threading.Event, answers: list[Answer]) -> list[threading.Thread]:
    def client(offset: int) -> None:
        calls = doors.all()
        index = offset
        while not stop.is_set():
            answers.append(calls[index % len(calls)]())
            index += 1
            time.sleep(0.05)

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


def fault_window(doors: Doors, fault, name: str, figures) -> None:
    """``fault()`` for OUTAGE_SECONDS under CLIENTS clients, then the database back: every
    answer to a request made inside the window is its door's 503, in time; no answer at all is
    a 500; every door answers as before after it, with nothing restarted."""
    answers: list[Answer] = []
    stop = threading.Event()
    threads = hammer(doors, stop, answers)
    time.sleep(1)
    fault.start()
    fault_started = time.monotonic()
    time.sleep(OUTAGE_SECONDS)
    fault_ended = time.monotonic()
    fault.end()
    recovered: dict[str, float] = {}
    deadline = time.monotonic() + 120
    while len(recovered) < len(doors.all()) and time.monotonic() < deadline:
        for call in doors.all():
            answer = call()
            if answer.door not in recovered and Doors.normal(answer) and answer.started > fault_ended:
                recovered[answer.door] = time.monotonic() - fault_ended
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(timeout=BUDGET + 3 * MARGIN)

    inside = [a for a in answers if a.started > fault_started and a.started + a.seconds < fault_ended]
    summary = sorted({(a.door, a.status, a.code or "") for a in answers})
    assert inside, [(a.door, a.status, round(a.started - fault_started, 1), round(a.seconds, 1)) for a in answers
                    if a.started > fault_started]
    assert all(Doors.unavailable(a) for a in inside), [
        (a.door, a.status, a.code, round(a.started - fault_started, 2), round(a.seconds, 2), a.body[:100])
        for a in inside if not Doors.unavailable(a)]
    assert not [a for a in answers if a.status == 500 or a.status == 0], summary
    assert all(Doors.normal(a) or Doors.unavailable(a) for a in answers), [
        (a.door, a.status, a.code, round(a.started - fault_started, 2), round(a.seconds, 2), a.body[:160])
        for a in answers if not (Doors.normal(a) or Doors.unavailable(a))]
    slowest = max(a.seconds for a in answers)
    assert slowest < BUDGET + MARGIN, slowest
    assert set(recovered) == {"rest", "mcp", "readyz", "join"}, (recovered, summary)
    figures.add(f"db_{name}_answers_503", sum(1 for a in answers if a.status == 503))
    figures.add(f"db_{name}_answers_500", sum(1 for a in answers if a.status >= 500 and a.status != 503))
    figures.add(f"db_{name}_slowest_503_seconds", round(max(a.seconds for a in answers if a.status == 503), 2))
    figures.add(f"db_{name}_recovery_seconds", round(max(recovered.values()), 2))


class Fault:
    def __init__(self, start, end) -> None:
        self.start, self.end = start, end


def test_a_database_down_or_hanging_is_a_503_on_every_door_and_heals(production_stack, fault_proxy, figures):
    stack = production_stack()
    proxy = fault_proxy(5432)
    database_url = proxied(stack.database_url, proxy.port)
    web = stack.web(DATABASE_URL=database_url)
    stack.worker(DATABASE_URL=database_url)
    doors = Doors(web.port, stack)
    assert all(Doors.normal(call()) for call in doors.all())
    workers = set(web.workers())

    fault_window(doors, Fault(proxy.down, proxy.up), "down", figures)
    fault_window(doors, Fault(proxy.hang, proxy.up), "hang", figures)

    # Nothing restarted: the same web processes serve, and a gallery add stores through the worker.
    assert set(web.workers()) == workers
    (stack.folder / "workspaces" / stack.world["workspace"] / "after-outage.png").write_bytes(
        images.png((400, 400), (9, 99, 199)))
    status, _, opened = web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"],
                                                      "workspace": stack.world["workspace"]})
    assert status == 201, opened
    assert web.call("PUT", f"sessions/{opened['session']}/phases/attachments")[0] == 200
    added = gallery_add(web.port, stack.key, opened["session"], stack.world["extensions"]["alice-ext"],
                        ["after-outage.png"])
    assert added["added"] == 1


# --- S3 --------------------------------------------------------------------------------------

@pytest.fixture
def s3_stack(production_stack, moto_endpoint):
    """A stack whose blobs are on S3 (moto), seeded there."""
    bucket = f"arkme-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    stack = production_stack(ARKME_STORAGE="s3", ARKME_S3_BUCKET=bucket, ARKME_S3_ENDPOINT_URL=moto_endpoint,
                             ARKME_S3_REGION="us-east-1", AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    silent = SilentServer()
    yield stack, f"http://127.0.0.1:{silent.port}"
    silent.close()


def add_a_new_image(web, stack) -> list[Answer]:
    """Prepare, 确认 and confirm of an image never stored: the answers, stopping at the first refusal."""
    name = f"{uuid.uuid4().hex[:8]}.png"
    (stack.folder / "workspaces" / stack.world["workspace"] / name).write_bytes(
        images.png((400, 400), tuple(int(c, 16) for c in (name[0:2], name[2:4], name[4:6]))))
    status, _, opened = web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"],
                                                      "workspace": stack.world["workspace"]})
    assert status == 201, opened
    session = opened["session"]
    assert web.call("PUT", f"sessions/{session}/phases/attachments")[0] == 200
    headers = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"}
    add = f"/dsh/v1/sessions/{session}/tools/arkme_extension_preview_add/execute"
    extension = stack.world["extensions"]["alice-ext"]
    prepared = request(web.port, "POST", add, json.dumps({"arguments": {
        "action": "prepare", "extension": extension, "source": "workspace", "workspace_paths": [name]}}).encode(),
        headers, "prepare")
    if prepared.status != 200:
        return [prepared]
    said = web.call("POST", f"sessions/{session}/messages", {"id": "m1", "text": "确认"})
    assert said[0] == 201, said
    operation = json.loads(prepared.body)["result"]["operation"]
    confirmed = request(web.port, "POST", add, json.dumps({"arguments": {
        "action": "confirm", "extension": extension, "operation": operation}}).encode(), headers, "confirm")
    return [prepared, confirmed]


def assert_storage_unavailable(answers: list[Answer]) -> Answer:
    refused = answers[-1]
    assert (refused.status, refused.code) == (503, "storage_unavailable"), [(a.door, a.status, a.body[:300])
                                                                            for a in answers]
    assert refused.content_type.startswith("application/json")
    assert refused.seconds < BUDGET + MARGIN, refused.seconds
    return refused


def test_a_hanging_s3_under_a_worker_is_storage_unavailable_within_the_budget(s3_stack, moto_endpoint, figures):
    """The web stages on a working S3; the worker's store task meets the hanging one. The web
    answers the task's own storage_unavailable, not task_queue_unavailable."""
    stack, silent = s3_stack
    web = stack.web()
    stack.worker(ARKME_S3_ENDPOINT_URL=silent)
    refused = assert_storage_unavailable(add_a_new_image(web, stack))
    figures.add("s3_hang_worker_503_seconds", round(refused.seconds, 2))


def test_a_hanging_s3_in_process_is_storage_unavailable_within_the_budget(s3_stack, figures):
    stack, silent = s3_stack
    web = stack.web(ARKME_S3_ENDPOINT_URL=silent, CELERY_BROKER_URL="")  # tasks in-process
    refused = assert_storage_unavailable(add_a_new_image(web, stack))
    figures.add("s3_hang_in_process_503_seconds", round(refused.seconds, 2))
    # The web process still serves.
    assert web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"]})[0] == 201

