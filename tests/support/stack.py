"""README's production stack, for fault tests: PostgreSQL (a fresh database per stack), a Redis
broker and result store, Celery workers, and web nodes, each a gunicorn master with this
repository's ``gunicorn.conf.py`` and two worker processes. Faults come from the test: a
process killed, a TCP proxy in front of a dependency cut or made to hang, a server that never
answers.

    def test_something(production_stack):
        stack = production_stack()                # PostgreSQL and Redis, or skip (fail in CI)
        web = stack.web()                         # one node, two processes
        stack.worker(queues="celery")             # a Celery worker
        status, _, body = web.call("POST", "sessions", {"account": stack.world["accounts"]["alice"]})

Every process logs to a file under the test's folder (``web.log``, ``worker-N.log``), which a
failing assertion can print.
"""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.live import ROOT, call, deployment, free_port, listening, wait_until_listening
from tests.support.services import require_service

POSTGRES_ADMIN = os.environ.get("ARKME_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432")


def _psql(sql: str, database: str = "postgres") -> None:
    subprocess.run(["psql", f"{POSTGRES_ADMIN}/{database}", "-qXc", sql], check=True, capture_output=True)


def redis_db() -> int:
    """A Redis database of this test run's own, 1-12, so parallel runs do not share a queue."""
    return int(os.environ.get("ARKME_TEST_REDIS_DB", str(1 + os.getpid() % 12)))


def _process_group_kill(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


@dataclass
class _Process:
    """A process the stack started, in a process group of its own, logging to a file."""

    process: subprocess.Popen
    log: Path
    # How long a graceful stop may take before the group is killed.
    grace_seconds = 30

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            _process_group_kill(self.process, sig)
            try:
                self.process.wait(timeout=self.grace_seconds)
            except subprocess.TimeoutExpired:
                _process_group_kill(self.process, signal.SIGKILL)
                self.process.wait(timeout=10)


@dataclass
class Web(_Process):
    """One web node: a gunicorn master and its worker processes."""

    port: int = 0
    key: str = ""
    grace_seconds = 40  # gunicorn's graceful timeout, and a margin

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, str, dict]:
        return call(self.port, self.key, method, path, body)

    def workers(self, count: int | None = None, seconds: float = 30) -> list[int]:
        """The worker processes' pids (waiting until ``count`` of them run, when given)."""
        deadline = time.monotonic() + seconds
        while True:
            pids = _children(self.process.pid)
            if count is None or len(pids) >= count or time.monotonic() > deadline:
                return pids
            time.sleep(0.1)


@dataclass
class Worker(_Process):
    """A Celery worker process."""


@dataclass
class Stack:
    folder: Path
    database: str
    env: dict[str, str]
    world: dict[str, Any]
    processes: list[_Process] = field(default_factory=list)

    @property
    def key(self) -> str:
        return str(self.world["dsh_key"])

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    def web(self, *options: str, workers: int = 2, **env: str) -> Web:
        """A web node as README runs it (``gunicorn config.wsgi -c gunicorn.conf.py``), once it
        listens; ``env`` overrides the stack's environment for this node only."""
        port = free_port()
        log = self.folder / f"web-{port}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "gunicorn.conf.py", "--bind",
             f"127.0.0.1:{port}", "--workers", str(workers), *options],
            cwd=ROOT, env={**self.env, **env}, stdout=log.open("ab"), stderr=subprocess.STDOUT,
            start_new_session=True)
        node = Web(process, log, port=port, key=self.key)
        self.processes.append(node)
        wait_until_listening(port, process, lambda: f"gunicorn did not start:\n{node.log_text()[-4000:]}",
                             seconds=30)
        node.workers(workers)
        return node

    def worker(self, *options: str, queues: str | None = None, concurrency: int = 1, **env: str) -> Worker:
        """A Celery worker as the Procfile runs it, once it answers a ping."""
        name = f"stack-{uuid.uuid4().hex[:8]}"
        log = self.folder / f"worker-{name}.log"
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "info", "-c", str(concurrency),
                   "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{name}@%h", *options]
        if queues:
            command += ["-Q", queues]
        process = subprocess.Popen(command, cwd=ROOT, env={**self.env, **env}, stdout=log.open("ab"),
                                   stderr=subprocess.STDOUT, start_new_session=True)
        running = Worker(process, log)
        self.processes.append(running)
        deadline = time.monotonic() + 60
        while "ready" not in running.log_text():
            assert process.poll() is None, f"the worker exited at start:\n{running.log_text()[-4000:]}"
            assert time.monotonic() < deadline, f"the worker did not come up:\n{running.log_text()[-4000:]}"
            time.sleep(0.2)
        return running

    def sql(self, statement: str) -> list[tuple[str, ...]]:
        """Rows of one statement on the stack's database, as text (through psql, not the test's
        own connection)."""
        done = subprocess.run(["psql", self.database_url, "-qXAt", "-F", "\t", "-c", statement], check=True,
                              capture_output=True, text=True)
        return [tuple(line.split("\t")) for line in done.stdout.splitlines() if line]

    def close(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        with contextlib.suppress(subprocess.CalledProcessError):
            _psql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


def postgres_up() -> bool:
    return listening(5432)


def redis_up() -> bool:
    return listening(6379)


@pytest.fixture
def production_stack(tmp_path: Path) -> Iterator[Any]:
    """A factory: ``production_stack(**env)`` gives a migrated, seeded :class:`Stack`; every
    process it started is stopped and its database dropped when the test ends."""
    stacks: list[Stack] = []

    def start(**env: str) -> Stack:
        require_service("PostgreSQL", postgres_up(), "PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres)")
        require_service("Redis", redis_up(), "redis-server on 127.0.0.1:6379")
        folder = tmp_path / f"stack-{len(stacks)}"
        (folder / "workspaces").mkdir(parents=True)
        database = f"arkme_stack_{uuid.uuid4().hex[:12]}"
        _psql(f'CREATE DATABASE "{database}"')
        broker = f"redis://127.0.0.1:6379/{redis_db()}"
        subprocess.run(["redis-cli", "-n", str(redis_db()), "flushdb"], capture_output=True)
        try:
            # Seeded with in-process tasks: the demo's images are stored before any worker runs.
            base, world = deployment(folder, DATABASE_URL=f"{POSTGRES_ADMIN}/{database}", CELERY_BROKER_URL="",
                                     DJANGO_SECRET_KEY="production-stack-test", **env)
        except BaseException:
            _psql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            raise
        stack = Stack(folder, database, {**base, "CELERY_BROKER_URL": broker}, world)
        stacks.append(stack)
        return stack

    yield start
    for stack in stacks:
        stack.close()


class FaultProxy:
    """A TCP proxy on 127.0.0.1 in front of ``target_port``: ``down()`` refuses new connections
    and cuts the open ones (a dependency that went away), ``hang()`` accepts and forwards
    nothing (one that stopped answering), ``up()`` forwards again on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.mode = "up"
        self._pairs: list[tuple[socket.socket, socket.socket | None]] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._stopped = False
        self._listen()

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(512)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self.mode == "hang":
                with self._lock:
                    self._pairs.append((client, None))
                continue
            if self.mode == "down":  # accepted just as it went down
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                # Connecting upstream takes a moment: a fault that came meanwhile has cut the
                # connections it knew of, so this one, which it did not, is dropped here.
                if self.mode != "up":
                    for sock in (client, upstream):
                        sock.close()
                    continue
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        try:
            while True:
                for key, _ in selector.select(timeout=1):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            selector.close()
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()

    def _cut(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                    with contextlib.suppress(OSError):
                        sock.close()

    def down(self) -> None:
        self.mode = "down"
        if self._listener is not None:
            # close() alone leaves the port listening while the accept thread is blocked in
            # accept() on it (Linux): shutdown() wakes it and stops listening.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        self._cut()

    def hang(self) -> None:
        self.mode = "hang"  # before the cut: a connection being made now is dropped (_accept)
        self._cut()
        if self._listener is None:
            self._listen()

    def up(self) -> None:
        self._cut()
        self.mode = "up"
        if self._listener is None:
            self._listen()

    def close(self) -> None:
        self.down()


@pytest.fixture
def fault_proxy() -> Iterator[Any]:
    """A factory: ``fault_proxy(target_port)`` gives a :class:`FaultProxy`, closed at the end."""
    proxies: list[FaultProxy] = []

    def start(target_port: int) -> FaultProxy:
        proxy = FaultProxy(target_port)
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.close()


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never answers (an S3 endpoint that hangs)."""

    def __init__(self) -> None:
        self.port = free_port()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", self.port))
        self._listener.listen(512)
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._held.append(client)

    def close(self) -> None:
        self._listener.close()
        for sock in self._held:
            with contextlib.suppress(OSError):
                sock.close()
