"""The MCP benchmarks compare like with like: FastMCP serves exactly the definitions the
product lists, checks arguments as the product does, runs as its users run it
(``uvicorn[standard]``: uvloop and httptools), and the product's side runs its own path end to
end (authentication, session, pipeline, audit row)."""
from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request

import anyio
import pytest

import toolregistry.toolsets
from bench import fastmcp_peer
from bench.mcp_tools import ECHO, SIZES, listed_definitions, registrar, write_definitions
from tests.support.errors import assert_tool_error
from tests.support.mcp import Mcp, value_of
from toolregistry.models import ToolCall


@pytest.mark.parametrize("n", SIZES)
def test_the_peer_lists_exactly_the_products_definitions(n, tmp_path, monkeypatch):
    ours = listed_definitions(n)
    assert len(ours) == n and ours[0]["name"] == ECHO and len({d["name"] for d in ours}) == n
    path = tmp_path / "tools.json"
    write_definitions(n, str(path))
    monkeypatch.setenv("ARKME_BENCH_TOOLS_FILE", str(path))
    theirs = {tool.name: tool for tool in anyio.run(fastmcp_peer.peer().list_tools)}
    assert list(theirs) == [d["name"] for d in ours]
    for definition in ours:
        tool = theirs[definition["name"]]
        assert tool.parameters == definition["inputSchema"]
        assert tool.output_schema == definition["outputSchema"]
        assert tool.title == definition["title"] and tool.description == definition["description"]


def test_the_peer_checks_arguments_and_echoes_like_the_product(tmp_path, monkeypatch):
    path = tmp_path / "tools.json"
    write_definitions(7, str(path))
    monkeypatch.setenv("ARKME_BENCH_TOOLS_FILE", str(path))
    echo = next(tool for tool in anyio.run(fastmcp_peer.peer().list_tools) if tool.name == ECHO)
    good = anyio.run(echo.run, {"text": "hi"})
    assert good.structured_content == {"echo": "hi"} and not good.is_error
    assert anyio.run(echo.run, {"text": 7}).is_error
    assert anyio.run(echo.run, {"text": "hi", "extra": 1}).is_error
    # Each tool is checked against its own schema, by a validator built once, not per call.
    tools = anyio.run(fastmcp_peer.peer().list_tools)
    assert {tool.name: fastmcp_peer._VALIDATORS[tool.name].schema for tool in tools} == {
        tool.name: tool.parameters for tool in tools}


def test_the_products_side_runs_its_own_path(dsh, world, monkeypatch):
    monkeypatch.setattr(toolregistry.toolsets, "registrar", registrar(32))
    session = dsh.open_session(world.alice, profile="hybrid")["session"]
    dsh.put(f"sessions/{session}/phases/attachments")
    client = Mcp(dsh, session)
    assert [tool["name"] for tool in client.tools()] == [d["name"] for d in listed_definitions(32)]
    assert value_of(client.call(ECHO, {"text": "hi"})) == {"echo": "hi"}
    assert_tool_error(client.call(ECHO, {"text": 7}), "invalid_arguments")
    assert list(ToolCall.objects.values_list("tool_name", "outcome", "surface")) == [
        (ECHO, "invalid_arguments", "mcp"), (ECHO, "ok", "mcp")]


def _gunicorn_settings(monkeypatch, arguments: list[str]):
    """The settings gunicorn itself reads for this command line, in the repository's folder."""
    from gunicorn.app.wsgiapp import WSGIApplication

    monkeypatch.setattr(sys, "argv", ["gunicorn", *arguments])
    return WSGIApplication().cfg


def test_neither_server_writes_an_access_log_and_the_product_keeps_its_settings(monkeypatch):
    """uvicorn runs with --no-access-log; gunicorn would read ./gunicorn.conf.py, access log
    and all, unless given another file. Otherwise the product runs exactly as deployed."""
    from gunicorn.workers.ggevent import GeventWorker

    from bench.mcp_serving import ROOT, product_arguments

    monkeypatch.chdir(ROOT)
    deployed = _gunicorn_settings(monkeypatch, ["config.wsgi"])
    benched, quiet = (_gunicorn_settings(monkeypatch, product_arguments(8000, access_log=log)) for log in (True, False))
    assert deployed.accesslog == benched.accesslog == "-"
    assert quiet.accesslog is None
    assert issubclass(quiet.worker_class, GeventWorker)
    assert quiet.workers == 2
    for name in ("worker_class_str", "worker_connections", "keepalive", "timeout", "graceful_timeout",
                 "forwarded_allow_ips"):
        assert getattr(quiet, name) == getattr(benched, name) == getattr(deployed, name), name


def test_the_peer_runs_under_uvicorn_standard_with_uvloop_and_httptools_by_name():
    """FastMCP's guide runs ``uvicorn app:app --host … --port … --workers N``; the bench names
    the loop and the parser ``auto`` would pick under ``uvicorn[standard]``, so that a machine
    without them cannot start the peer rather than quietly serve it on asyncio and h11."""
    from uvicorn.main import main

    from bench.mcp_serving import PEER_HTTP, PEER_LOOP, peer_arguments, peer_packages

    params = main.make_context("uvicorn", peer_arguments(8000)).params
    assert params["app"] == "bench.fastmcp_peer:app"
    assert (params["loop"], params["http"]) == (PEER_LOOP, PEER_HTTP) == ("uvloop", "httptools")
    assert params["workers"] == 2 and params["access_log"] is False and params["host"] == "127.0.0.1"
    assert "uvloop" in peer_packages() and "httptools" in peer_packages()


def _runtime_under(loop: str, http: str) -> dict[str, str]:
    """What ``fastmcp_peer.runtime`` answers when uvicorn serves with ``loop`` and ``http``."""
    import uvicorn

    from bench.common import free_port

    async def never(scope, receive, send):
        raise AssertionError("only the runtime path is asked")

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(fastmcp_peer.with_runtime(never), host="127.0.0.1", port=port,
                                           loop=loop, http=http, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{fastmcp_peer.RUNTIME_PATH}", timeout=10) as answer:
            return json.load(answer)
    finally:
        server.should_exit = True
        thread.join(20)


def test_the_peer_reports_the_loop_and_parser_it_actually_serves_with():
    from bench.mcp_serving import PEER_RUNTIME

    assert _runtime_under("uvloop", "httptools") == PEER_RUNTIME
    fallback = _runtime_under("asyncio", "h11")
    assert fallback["loop"].startswith("asyncio.") and "h11_impl" in fallback["http"]


def test_the_product_is_served_with_the_procfiles_malloc_arenas(monkeypatch):
    from bench.mcp_serving import product_environment
    from tests.test_malloc_arenas import procfile

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert "MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-1}" in procfile()["web"]
    assert product_environment()["MALLOC_ARENA_MAX"] == "1"
    monkeypatch.setenv("MALLOC_ARENA_MAX", "3")  # an operator's setting is kept, as the Procfile keeps it
    assert product_environment(7)["MALLOC_ARENA_MAX"] == "3"
    assert product_environment(7)["ARKME_BENCH_MCP_TOOLS"] == "7"


def test_the_peer_serves_a_call_as_the_served_figures_start_it(tmp_path):
    """uvicorn's workers import the peer with nothing of Django set up, as the served figures
    start it (``mcp_serving.start_peer``): it starts, reports its runtime and answers a call."""
    from bench.mcp_serving import request, start_peer

    server = start_peer(7, tmp_path)
    try:
        body, headers = request("tools/call", {"name": ECHO, "arguments": {"text": "hi"}}, None, ECHO)
        sent = urllib.request.Request(server.url + "/mcp", body.encode(), headers, method="POST")  # noqa: S310
        with urllib.request.urlopen(sent, timeout=20) as answer:  # noqa: S310 (our http://127.0.0.1 URL)
            assert json.load(answer)["result"]["structuredContent"] == {"echo": "hi"}
    finally:
        server.stop()
