"""The serving model under fire, on README's production stack (gunicorn with gunicorn.conf.py,
two gevent worker processes, PostgreSQL, Redis): readiness probes at once beside working
clients, and a flood of idle keep-alive connections beside one working client."""
from __future__ import annotations

import contextlib
import http.client
import json
import selectors
import socket
import statistics
import threading
import time
from dataclasses import dataclass, field

import pytest

pytestmark = pytest.mark.postgres

BUDGET = 25  # ARKME_REQUEST_BUDGET_SECONDS's default


@dataclass
class Answers:
    """What clients saw: each answer's status and whether its body was JSON, and latencies."""

    statuses: list[int] = field(default_factory=list)
    not_json: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: int, content_type: str, raw: bytes, seconds: float) -> dict:
        try:
            body = json.loads(raw) if content_type.startswith("application/json") else None
        except ValueError:
            body = None
        with self.lock:
            self.statuses.append(status)
            self.seconds.append(seconds)
            if body is None and not (status == 204 and not raw):
                self.not_json.append(f"{status} {content_type}: {raw[:200]!r}")
        return body or {}

    @property
    def server_errors(self) -> list[int]:
        return [status for status in self.statuses if status >= 500]


class Client:
    """One client on one keep-alive connection (a new one after a failure), as SDKs do."""

    def __init__(self, port: int, key: str, answers: Answers) -> None:
        self.port, self.key, self.answers = port, key, answers
        self.connection: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        started = time.monotonic()
        for attempt in (1, 2):  # a keep-alive connection the server closed meanwhile: once more
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=BUDGET + 35)
            try:
                self.connection.request(method, path, json.dumps(body) if body is not None else None,
                                        {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
                response = self.connection.getresponse()
                raw = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as error:
                self.close()
                if attempt == 2:
                    with self.answers.lock:
                        self.answers.failures.append(f"{method} {path}: {error!r}")
                    return 0, {}
                continue
            except OSError as error:  # a timeout: no answer at all
                self.close()
                with self.answers.lock:
                    self.answers.failures.append(f"{method} {path}: {error!r}")
                return 0, {}
            if response.will_close:
                self.close()
            elapsed = time.monotonic() - started
            return response.status, self.answers.add(response.status, response.getheader("Content-Type", ""), raw,
                                                     elapsed)
        raise AssertionError("unreachable")

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        return self.request(method, f"/dsh/v1/{path}", body)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def work(client: Client, account: str, until: float) -> None:
    """Real calls until ``until``: open a session, execute arkme_context, read the session."""
    while time.monotonic() < until:
        status, opened = client.call("POST", "sessions", {"account": account})
        if status != 201 or "session" not in opened:
            continue
        session = opened["session"]
        client.call("POST", f"sessions/{session}/tools/arkme_context/execute", {"arguments": {}})
        client.call("GET", f"sessions/{session}")
        client.call("DELETE", f"sessions/{session}")


def warm_up(port: int, key: str, account: str) -> None:
    """A few of each request on new connections, so that both processes have loaded what a
    first request loads before the measured window."""
    for _ in range(4):
        client = Client(port, key, Answers())
        client.request("GET", "/readyz")
        work(client, account, time.monotonic() + 0.1)
        client.close()


def describe(answers: Answers) -> str:
    return (f"{len(answers.statuses)} answers, statuses {sorted(set(answers.statuses))}, "
            f"5xx {len(answers.server_errors)}, not JSON {answers.not_json[:3]}, failures {answers.failures[:3]}")


def test_readiness_probes_at_once_beside_working_clients_are_all_json_and_harm_nothing(production_stack, figures):
    """Several probes back to back on one node while eight clients work: every probe is a JSON
    200 and every other request succeeds (before: HTML 500s from the probes and
    SynchronousOnlyOperation in the clients' requests)."""
    stack = production_stack()
    web = stack.web()
    accounts = list(stack.world["accounts"].values())
    warm_up(web.port, stack.key, accounts[0])
    calls, probes = Answers(), Answers()
    until = time.monotonic() + 8

    def probe() -> None:
        client = Client(web.port, stack.key, probes)
        while time.monotonic() < until:
            client.close()  # an orchestrator's probe comes on a connection of its own
            client.request("GET", "/readyz")
        client.close()

    threads = [threading.Thread(target=work, args=(Client(web.port, stack.key, calls), accounts[i % len(accounts)],
                                                   until)) for i in range(8)]
    threads += [threading.Thread(target=probe) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BUDGET + 60)
    log = web.log_text()

    figures.record("serving_probes_at_once_probes", len(probes.statuses))
    figures.record("serving_probes_at_once_calls", len(calls.statuses))
    figures.record("serving_probes_at_once_5xx", len(probes.server_errors) + len(calls.server_errors))
    if calls.seconds and probes.seconds:
        figures.record("serving_probes_at_once_call_median_ms", round(1000 * statistics.median(calls.seconds), 1))
        figures.record("serving_probes_at_once_probe_median_ms", round(1000 * statistics.median(probes.seconds), 1))
    assert probes.statuses and calls.statuses
    assert set(probes.statuses) == {200} and not probes.not_json and not probes.failures, describe(probes) + log[-6000:]
    assert not calls.server_errors and not calls.not_json and not calls.failures, describe(calls)
    assert set(calls.statuses) <= {200, 201, 204}, describe(calls)
    assert "SynchronousOnlyOperation" not in log, log[-4000:]


class IdleFlood:
    """``count`` sockets that connect and say nothing, each reconnecting as soon as the server
    closes it (gunicorn closes an idle connection after its keep-alive timeout)."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.selector = selectors.DefaultSelector()
        self.reconnects = 0
        self.held = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.connect_ex(("127.0.0.1", self.port))
        self.selector.register(sock, selectors.EVENT_READ)

    def _run(self) -> None:
        for _ in range(self.count):
            self._open()
        while not self.stopping.is_set():
            self.held = len(self.selector.get_map())
            for key, _ in self.selector.select(timeout=0.2):
                sock = key.fileobj
                try:
                    data = sock.recv(4096)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the server: come back at once
                    self.selector.unregister(sock)
                    sock.close()  # type: ignore[union-attr]
                    self.reconnects += 1
                    self._open()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()

    def __enter__(self) -> IdleFlood:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(10)


def test_a_flood_of_idle_connections_takes_nothing_from_a_working_client(production_stack, figures):
    """400 idle sockets, reconnecting as the server closes them, against one node of two
    processes, while one client works: its calls all succeed, each within half the request
    budget (before: 64 connection slots for the two processes, so calls waited seconds or got
    no answer at all)."""
    stack = production_stack()
    web = stack.web()
    account = stack.world["accounts"]["alice"]
    warm_up(web.port, stack.key, account)
    calls = Answers()
    with IdleFlood(web.port, 400) as flood:
        time.sleep(2)  # every idle socket connected and waiting
        work(Client(web.port, stack.key, calls), account, time.monotonic() + 12)
        held, reconnects = flood.held, flood.reconnects

    figures.record("serving_idle_flood_sockets", held)
    figures.record("serving_idle_flood_reconnects", reconnects)
    figures.record("serving_idle_flood_calls", len(calls.statuses))
    if calls.seconds:
        figures.record("serving_idle_flood_call_median_ms", round(1000 * statistics.median(calls.seconds), 1))
        figures.record("serving_idle_flood_call_max_ms", round(1000 * max(calls.seconds), 1))
    assert held >= 350, f"the flood held only {held} sockets"
    # gunicorn's keep-alive timeout still closes idle connections (they do not pile up for good).
    assert reconnects >= 200, f"the server closed only {reconnects} idle sockets"
    assert len(calls.statuses) >= 20 and not calls.failures, describe(calls)
    assert not calls.server_errors and not calls.not_json, describe(calls)
    slow = [round(seconds, 1) for seconds in calls.seconds if seconds > BUDGET / 2]
    assert not slow, f"calls that waited past {BUDGET / 2:g} s: {slow}; {describe(calls)}"
