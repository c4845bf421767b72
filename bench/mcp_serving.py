"""MCP on the wire: the product's endpoint against FastMCP 4 serving the same definitions.

Both run as a deployment would: the product under gunicorn (2 processes, otherwise the
project's ``gunicorn.conf.py`` settings: gevent workers, keep-alive), FastMCP under
``uvicorn[standard]`` (2 processes, uvloop and httptools, as ``peer_arguments`` says why),
neither writing an access log. The product's database is PostgreSQL when ``DATABASE_URL``
names a server (a fresh database beside it, through the pool ``config/settings.py`` sets up, as
production runs), the embedded SQLite otherwise; the figure's ``database`` line says which. The same
non-Python load generator (Debian's ``wrk``) drives both over keep-alive connections, with
the same ``2026-07-28`` requests. Windows alternate between the two servers, so drift in the
machine's speed falls on both alike. Reported per tool count (7, 32, 128): requests per
second, server CPU per request (user + system time of every server process, from
``/proc``, over the requests served), p50 and p99 latency.

The work is not identical, and the difference is the product's: each product request also
authenticates the client key, reads the session, and a call writes its audit row.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .common import (
    SERVED_SPREAD,
    Result,
    database_label,
    free_port,
    postgres_url,
    served_at_least,
    served_at_most,
    wait_for_port,
)

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 8
WINDOW_SECONDS = 3
ROUNDS = 3
MODERN = "2026-07-28"
TICKS = os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> list[int]:
    """The process and its descendants (the server's workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def cpu_seconds(pid: int) -> float:
    total = 0
    for process in _tree(pid):
        try:
            fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


@dataclass
class Server:
    name: str
    process: subprocess.Popen
    url: str
    runtime: str = ""
    # With a PostgreSQL database on this machine: its backends' CPU is measured beside the
    # server's (``database_cpu_seconds``), reported apart, never in the ratio.
    measures_database: bool = False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def quiet_config() -> Path:
    """The project's gunicorn.conf.py less its access log. gunicorn reads ./gunicorn.conf.py
    unless told another file, so leaving out ``-c`` keeps the log on."""
    quiet = Path(tempfile.mkdtemp(prefix="arkme-gunicorn-")) / "gunicorn.conf.py"
    quiet.write_text(f"exec(open({str(ROOT / 'gunicorn.conf.py')!r}).read())\naccesslog = None\n")
    return quiet


def product_arguments(port: int, *, access_log: bool = True) -> list[str]:
    """gunicorn's command line for the product: the project's settings with two processes."""
    config = ROOT / "gunicorn.conf.py" if access_log else quiet_config()
    return ["config.wsgi", "-c", str(config), "--workers", "2", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"]


def product_environment(n: int | None = None) -> dict[str, str]:
    """The product's environment as the Procfile's web process has it (glibc's malloc arenas
    capped, unless the operator set them), with the bench settings; with ``n``, n bench tools."""
    env = {"MALLOC_ARENA_MAX": "1", **os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings",
           "WEB_CONCURRENCY": "2", "DATABASE_CONN_MAX_AGE": "60"}
    if n is not None:
        env["ARKME_BENCH_MCP_TOOLS"] = str(n)
    return env


def start_product(n: int | None = None, *, access_log: bool = True) -> Server:
    """The product as gunicorn.conf.py deploys it; with ``n``, its catalog serves n bench tools;
    without ``access_log``, the same settings but no access log."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", *product_arguments(port, access_log=access_log)],
                               cwd=ROOT, env=product_environment(n), stdout=subprocess.DEVNULL)
    wait_for_port(port, process)
    return Server("product", process, f"http://127.0.0.1:{port}")


# What the peer must be served with: uvicorn's `standard` extra, which its installation docs
# (uvicorn.org/installation) say it then uses by default. Named on the command line rather than
# left to ``auto``, so a machine without them fails to start the peer instead of falling back
# to asyncio's loop and h11 without a word.
PEER_LOOP, PEER_HTTP = "uvloop", "httptools"
PEER_RUNTIME = {"loop": "uvloop.Loop", "http": "uvicorn.protocols.http.httptools_impl.RequestResponseCycle"}


def peer_arguments(port: int) -> list[str]:
    """uvicorn's command line for the peer. FastMCP's HTTP deployment guide
    (gofastmcp.com/deployment/http, "Production Deployment: Running with Uvicorn" and
    "Horizontal Scaling") runs the ASGI app as ``uvicorn app:app --host 0.0.0.0 --port 8000
    --workers 4`` with stateless HTTP: so here, on loopback, with the product's two processes,
    uvloop and httptools (what ``auto`` picks under ``uvicorn[standard]``, asked for by name) and,
    like the product here, no access log."""
    return ["bench.fastmcp_peer:app", "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
            "--loop", PEER_LOOP, "--http", PEER_HTTP, "--log-level", "warning", "--no-access-log"]


def peer_packages() -> str:
    """The versions of what serves the peer; raises if uvloop or httptools is missing."""
    from importlib.metadata import version

    import httptools  # noqa: F401  (ImportError here: install requirements-bench.txt)
    import uvloop  # noqa: F401

    return ", ".join(f"{name} {version(name)}" for name in ("fastmcp", "uvicorn", "uvloop", "httptools"))


def peer_runtime(server: Server) -> dict[str, str]:
    """What a worker of the running peer reports it serves with (``fastmcp_peer.runtime``)."""
    import json
    import urllib.request

    from .fastmcp_peer import RUNTIME_PATH

    with urllib.request.urlopen(server.url + RUNTIME_PATH, timeout=10) as answer:  # noqa: S310 (our http://127.0.0.1 URL)
        return json.load(answer)


def start_peer(n: int, folder: Path) -> Server:
    from .mcp_tools import write_definitions

    packages = peer_packages()
    tools_file = folder / f"tools-{n}.json"
    write_definitions(n, str(tools_file))
    port = free_port()
    env = {**os.environ, "ARKME_BENCH_TOOLS_FILE": str(tools_file)}
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", *peer_arguments(port)], cwd=ROOT, env=env)
    wait_for_port(port, process)
    server = Server("fastmcp", process, f"http://127.0.0.1:{port}")
    try:
        # Asked a few times, whichever worker answers: both run the same command line.
        seen = [peer_runtime(server) for _ in range(4)]
        if any(found != PEER_RUNTIME for found in seen):
            raise RuntimeError(f"the peer does not run on uvloop and httptools: {seen}")
    except BaseException:
        server.stop()
        raise
    server.runtime = f"{packages}; loop {seen[0]['loop']}, HTTP {seen[0]['http']}, 2 workers"
    return server


def lua_script(method: str, body: str, headers: dict[str, str]) -> str:
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(body)}"]
    lines += [f"wrk.headers[{_lua_string(name)}] = {_lua_string(value)}" for name, value in headers.items()]
    return "\n".join(lines) + "\n"


def _lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def request(method: str, params: dict, key: str | None, name: str | None = None) -> tuple[str, dict[str, str]]:
    import json

    params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                  "io.modelcontextprotocol/clientCapabilities": {}}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return body, headers


@dataclass
class Window:
    requests: int
    seconds: float
    cpu: float
    p50_ms: float
    p99_ms: float
    database_cpu: float | None = None  # the product's PostgreSQL backends, when measured


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def database_cpu_seconds() -> dict[int, float] | None:
    """CPU seconds so far of each PostgreSQL backend on this figure's database (but the bench's
    own connection), read from ``/proc``; None when the server's processes are not on this
    machine."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid()")
        pids = [row[0] for row in cursor.fetchall()]
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return seconds if seconds or not pids else None


def drive(server: Server, path: str, script: Path, *args: str) -> Window:
    """One window of load; ``args`` go to the script's ``init``."""
    database_before = database_cpu_seconds() if server.measures_database else None
    before = cpu_seconds(server.process.pid)
    started = time.monotonic()
    out = subprocess.run(["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{WINDOW_SECONDS}s", "--latency", "-s", str(script),
                          server.url + path, *(["--", *args] if args else [])],
                         capture_output=True, text=True, check=True).stdout
    seconds = time.monotonic() - started
    cpu = cpu_seconds(server.process.pid) - before
    database_cpu = None
    if database_before is not None:
        after = database_cpu_seconds() or {}
        # A backend that ended in the window is not counted (the pool keeps its connections).
        database_cpu = sum(spent - database_before.get(pid, 0.0) for pid, spent in after.items())
    if "Non-2xx" in out:
        raise RuntimeError(f"{server.name} answered errors:\n{out}")
    count = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    return Window(count, seconds, cpu, _ms(*p50.groups()), _ms(*p99.groups()), database_cpu)


def compare(servers: dict[str, tuple[Server, str, Path]]) -> dict[str, dict[str, Any]]:
    """Alternating windows per server; totals over the rounds, and each round's window."""
    for server, path, script in servers.values():  # warm-up
        drive(server, path, script)
    windows: dict[str, list[Window]] = {name: [] for name in servers}
    for _ in range(ROUNDS):
        for name, (server, path, script) in servers.items():
            windows[name].append(drive(server, path, script))
    figures = {}
    for name, measured in windows.items():
        count = sum(w.requests for w in measured)
        figures[name] = {
            "rps": count / sum(w.seconds for w in measured),
            "cpu_us": 1e6 * sum(w.cpu for w in measured) / count,
            "p50_ms": sorted(w.p50_ms for w in measured)[len(measured) // 2],
            "p99_ms": max(w.p99_ms for w in measured),
            "windows": measured,
        }
        if all(w.database_cpu is not None for w in measured):
            figures[name]["database_cpu_us"] = 1e6 * sum(w.database_cpu or 0.0 for w in measured) / count
    return figures


def round_range(ours: list[Window], theirs: list[Window], per: Callable[[Window], float]) -> tuple[float, float]:
    """The lowest and highest of the rounds' ratios (a round: a window of each server)."""
    ratios = [per(a) / per(b) for a, b in zip(ours, theirs, strict=True)]
    return min(ratios), max(ratios)


def measure(kind: str) -> Result:
    """``kind`` is ``tools_list`` or ``call``."""
    name = f"mcp_{kind}"
    baseline = ("FastMCP 4 (stateless HTTP, JSON) serving the same definitions under uvicorn[standard] "
                "(uvloop, httptools), same load")
    goal = (f"≥ 1.0× its requests/s and ≤ 1.0× its CPU/request at 7, 32, 128 tools (served: gated past the "
            f"machine's {SERVED_SPREAD:.0%} spread; counted in instructions by ir_mcp_tools_call/list)")
    if shutil.which("wrk") is None:
        return Result(name, None, "", baseline, goal, skipped="needs wrk (Debian package wrk)")
    server = postgres_url()
    if server is not None and not os.environ.get("ARKME_BENCH_DATABASE_URL"):
        # Production runs on PostgreSQL through the pool config/settings.py configures: given a
        # server, the figure runs there, on a fresh database made beside it (the product's
        # workers inherit it), not on the embedded default.
        from .__main__ import _run_on_postgres

        try:
            return Result(**_run_on_postgres(name, server))
        except subprocess.CalledProcessError as error:  # its output is captured: say why it failed
            raise RuntimeError(f"{name} on PostgreSQL failed:\n{(error.stderr or '')[-1500:]}") from None
    from django.db import connection

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.sessions import session_open, session_set_attachments

    from .mcp_tools import ECHO, SIZES

    client, key = dsh_client_create(name=f"bench-{name}-{time.monotonic_ns()}")
    account = Account.objects.create(display_name="MCP bench")
    session = session_open(client=client, account=account.public_id, profile="hybrid").public_id
    session_set_attachments(client=client, public_id=session, mounted=True)
    if kind == "tools_list":
        method, params, tool = "tools/list", {}, None
    else:
        method, params, tool = "tools/call", {"name": ECHO, "arguments": {"text": "hello"}}, ECHO
    detail: dict[str, object] = {"database": database_label()}
    worst_rps, worst_cpu = float("inf"), 0.0
    with tempfile.TemporaryDirectory(prefix="arkme-mcp-bench-") as folder:
        scripts = {}
        for who, auth in (("product", key), ("fastmcp", None)):
            body, headers = request(method, params, auth, tool)
            scripts[who] = Path(folder) / f"{who}.lua"
            scripts[who].write_text(lua_script(method, body, headers))
        for n in SIZES:
            product = start_product(n, access_log=False)
            product.measures_database = connection.vendor == "postgresql"
            try:
                peer = start_peer(n, Path(folder))
            except BaseException:
                product.stop()
                raise
            detail.setdefault("peer_runtime", peer.runtime)
            try:
                figures = compare({
                    "product": (product, f"/dsh/v1/sessions/{session}/mcp", scripts["product"]),
                    "fastmcp": (peer, "/mcp", scripts["fastmcp"]),
                })
            finally:
                product.stop()
                peer.stop()
            ours, theirs = figures["product"], figures["fastmcp"]
            rps_ratio, cpu_ratio = ours["rps"] / theirs["rps"], ours["cpu_us"] / theirs["cpu_us"]
            worst_rps, worst_cpu = min(worst_rps, rps_ratio), max(worst_cpu, cpu_ratio)
            rps_low, rps_high = round_range(ours["windows"], theirs["windows"], lambda w: w.requests / w.seconds)
            cpu_low, cpu_high = round_range(ours["windows"], theirs["windows"], lambda w: w.cpu / w.requests)
            line = (
                f"product {ours['rps']:.0f} req/s, {ours['cpu_us']:.0f} µs CPU/req, p50 {ours['p50_ms']:.1f} ms, "
                f"p99 {ours['p99_ms']:.1f} ms | FastMCP {theirs['rps']:.0f} req/s, {theirs['cpu_us']:.0f} µs "
                f"CPU/req, p50 {theirs['p50_ms']:.1f} ms, p99 {theirs['p99_ms']:.1f} ms | "
                f"×{rps_ratio:.2f} req/s (rounds {rps_low:.2f}–{rps_high:.2f}), "
                f"×{cpu_ratio:.2f} CPU (rounds {cpu_low:.2f}–{cpu_high:.2f})")
            if "database_cpu_us" in ours:
                line += (f" | besides, the product's PostgreSQL backends {ours['database_cpu_us']:.0f} µs CPU/req "
                         f"(not in the ratio)")
            detail[f"{n}_tools"] = line
    detail["worst_cpu_ratio"] = round(worst_cpu, 3)
    return Result(name, round(worst_rps, 3), "× FastMCP's requests/s (worst tool count)", baseline, goal,
                  served_at_least(worst_rps, 1.0) and served_at_most(worst_cpu, 1.0), detail)
