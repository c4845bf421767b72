"""MCP on the wire: the product's endpoint against FastMCP 4 serving the same definitions.

Both run as a deployment would: the product under gunicorn (2 processes, otherwise the
project's ``gunicorn.conf.py`` settings: gevent workers, keep-alive), FastMCP under uvicorn
(2 processes), neither writing an access log. The same
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

from .common import SERVED_SPREAD, Result, free_port, served_at_least, served_at_most, wait_for_port

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
    return ["arkme.wsgi", "-c", str(config), "--workers", "2", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"]


def start_product(n: int | None = None, *, access_log: bool = True) -> Server:
    """The product as gunicorn.conf.py deploys it; with ``n``, its catalog serves n bench tools;
    without ``access_log``, the same settings but no access log."""
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "WEB_CONCURRENCY": "2",
           "DATABASE_CONN_MAX_AGE": "60"}
    if n is not None:
        env["ARKME_BENCH_MCP_TOOLS"] = str(n)
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", *product_arguments(port, access_log=access_log)],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    wait_for_port(port, process)
    return Server("product", process, f"http://127.0.0.1:{port}")


def start_peer(n: int, folder: Path) -> Server:
    from .mcp_tools import write_definitions

    tools_file = folder / f"tools-{n}.json"
    write_definitions(n, str(tools_file))
    port = free_port()
    env = {**os.environ, "ARKME_BENCH_TOOLS_FILE": str(tools_file)}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bench.fastmcp_peer:app", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "2", "--log-level", "warning", "--no-access-log"],
        cwd=ROOT, env=env)
    wait_for_port(port, process)
    return Server("fastmcp", process, f"http://127.0.0.1:{port}")


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


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def drive(server: Server, path: str, script: Path, *args: str) -> Window:
    """One window of load; ``args`` go to the script's ``init``."""
    before = cpu_seconds(server.process.pid)
    started = time.monotonic()
    out = subprocess.run(["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{WINDOW_SECONDS}s", "--latency", "-s", str(script),
                          server.url + path, *(["--", *args] if args else [])],
                         capture_output=True, text=True, check=True).stdout
    seconds = time.monotonic() - started
    cpu = cpu_seconds(server.process.pid) - before
    if "Non-2xx" in out:
        raise RuntimeError(f"{server.name} answered errors:\n{out}")
    count = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    return Window(count, seconds, cpu, _ms(*p50.groups()), _ms(*p99.groups()))


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
    return figures


def round_range(ours: list[Window], theirs: list[Window], per: Callable[[Window], float]) -> tuple[float, float]:
    """The lowest and highest of the rounds' ratios (a round: a window of each server)."""
    ratios = [per(a) / per(b) for a, b in zip(ours, theirs, strict=True)]
    return min(ratios), max(ratios)


def measure(kind: str) -> Result:
    """``kind`` is ``tools_list`` or ``call``."""
    name = f"mcp_{kind}"
    baseline = "FastMCP 4 (stateless HTTP, JSON) serving the same definitions, same load"
    goal = (f"≥ 1.0× its requests/s and ≤ 1.0× its CPU/request at 7, 32, 128 tools (served: gated past the "
            f"machine's {SERVED_SPREAD:.0%} spread; counted in instructions by ir_mcp_tools_call/list)")
    if shutil.which("wrk") is None:
        return Result(name, None, "", baseline, goal, skipped="needs wrk (Debian package wrk)")
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
    detail: dict[str, object] = {}
    worst_rps, worst_cpu = float("inf"), 0.0
    with tempfile.TemporaryDirectory(prefix="arkme-mcp-bench-") as folder:
        scripts = {}
        for who, auth in (("product", key), ("fastmcp", None)):
            body, headers = request(method, params, auth, tool)
            scripts[who] = Path(folder) / f"{who}.lua"
            scripts[who].write_text(lua_script(method, body, headers))
        for n in SIZES:
            product, peer = start_product(n, access_log=False), start_peer(n, Path(folder))
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
            detail[f"{n}_tools"] = (
                f"product {ours['rps']:.0f} req/s, {ours['cpu_us']:.0f} µs CPU/req, p50 {ours['p50_ms']:.1f} ms, "
                f"p99 {ours['p99_ms']:.1f} ms | FastMCP {theirs['rps']:.0f} req/s, {theirs['cpu_us']:.0f} µs "
                f"CPU/req, p50 {theirs['p50_ms']:.1f} ms, p99 {theirs['p99_ms']:.1f} ms | "
                f"×{rps_ratio:.2f} req/s (rounds {rps_low:.2f}–{rps_high:.2f}), "
                f"×{cpu_ratio:.2f} CPU (rounds {cpu_low:.2f}–{cpu_high:.2f})")
    detail["worst_cpu_ratio"] = round(worst_cpu, 3)
    return Result(name, round(worst_rps, 3), "× FastMCP's requests/s (worst tool count)", baseline, goal,
                  served_at_least(worst_rps, 1.0) and served_at_most(worst_cpu, 1.0), detail)
