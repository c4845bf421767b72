"""The MCP benchmarks compare like with like: FastMCP serves exactly the definitions the
product lists, checks arguments as the product does, and the product's side runs its own
path end to end (authentication, session, pipeline, audit row)."""
from __future__ import annotations

import sys

import anyio
import pytest

import toolregistry.sessions
from bench import fastmcp_peer
from bench.mcp_tools import ECHO, SIZES, listed_definitions, registrar, write_definitions
from tests.support.mcp import Mcp, error_of, value_of
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
    monkeypatch.setattr(toolregistry.sessions, "registrar", registrar(32))
    session = dsh.open_session(world.alice, profile="hybrid")["session"]
    dsh.put(f"sessions/{session}/phases/attachments")
    client = Mcp(dsh, session)
    assert [tool["name"] for tool in client.tools()] == [d["name"] for d in listed_definitions(32)]
    assert value_of(client.call(ECHO, {"text": "hi"})) == {"echo": "hi"}
    assert error_of(client.call(ECHO, {"text": 7}))["code"] == "invalid_arguments"
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
    deployed = _gunicorn_settings(monkeypatch, ["arkme.wsgi"])
    benched, quiet = (_gunicorn_settings(monkeypatch, product_arguments(8000, access_log=log)) for log in (True, False))
    assert deployed.accesslog == benched.accesslog == "-"
    assert quiet.accesslog is None
    assert issubclass(quiet.worker_class, GeventWorker)
    assert quiet.workers == 2
    for name in ("worker_class_str", "worker_connections", "keepalive", "timeout", "graceful_timeout",
                 "forwarded_allow_ips"):
        assert getattr(quiet, name) == getattr(benched, name) == getattr(deployed, name), name
