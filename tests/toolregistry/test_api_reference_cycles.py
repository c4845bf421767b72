"""A DSH call's objects are freed by reference counting when it ends, not left in reference
cycles for the garbage collector (toolregistry.api.base.DshApiView)."""
from __future__ import annotations

import gc
import itertools
import json
from collections.abc import Callable

import pytest
from django.db.models import Model
from django.http import HttpRequest, HttpResponseBase
from rest_framework.request import Request
from rest_framework.views import APIView

from config.wsgi import application
from tests.support.mcp import MODERN
from tests.support.wsgi import environ, requests_keep_the_connection

# What a call builds that would keep the rest alive: the views, both requests, the response
# (which holds the result) and the session's model instances.
TRACKED = (APIView, Request, HttpRequest, HttpResponseBase, Model)


def left_in_cycles(call: Callable[[], None]) -> list[str]:
    """The call's objects that only the cyclic collector would free."""
    call()  # first calls fill caches; those are not the call's garbage
    was_enabled = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        call()
        gc.collect()
        return sorted({type(o).__qualname__ for o in gc.garbage if isinstance(o, TRACKED)})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def wsgi_call(method: str, path: str, body: object = None, key: str | None = None, *, new_key: bool = False,
              **headers: str) -> Callable[[], None]:
    """One call through the whole WSGI stack; ``new_key``: a new ``Idempotency-Key`` each time."""
    raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    keys = itertools.count()

    def call() -> None:
        if new_key:
            headers["HTTP_IDEMPOTENCY_KEY"] = f"cycle-check-{next(keys)}"
        statuses: list[str] = []
        chunks = application(environ(method, f"/dsh/v1/{path}", raw, CONTENT_TYPE="application/json", **headers),
                             lambda status, _headers: statuses.append(status))
        b"".join(chunks)
        chunks.close()  # type: ignore[attr-defined]
        assert statuses and not statuses[0].startswith("5"), statuses

    return call


@pytest.fixture
def calls(dsh, session, refs) -> dict[str, Callable[[], None]]:
    key = dsh.key
    etag = dsh.get(f"sessions/{session}")["ETag"]
    execute = f"sessions/{session}/tools/{{}}/execute"
    return {
        "arkme_context": wsgi_call("POST", execute.format("arkme_context"), {"arguments": {}}, key),
        "candidates": wsgi_call("POST", execute.format("arkme_group_member_candidates"),
                                {"arguments": {"source_ref": refs["open-group"]}}, key),
        "a new Idempotency-Key": wsgi_call("POST", execute.format("arkme_context"), {"arguments": {}}, key,
                                           new_key=True),
        # Called twice by the check: the second call is a repeat, answered from the record.
        "a repeated Idempotency-Key": wsgi_call("POST", execute.format("arkme_context"), {"arguments": {}}, key,
                                                HTTP_IDEMPOTENCY_KEY="cycle-check"),
        "session view": wsgi_call("GET", f"sessions/{session}", None, key),
        "session view, 304": wsgi_call("GET", f"sessions/{session}", None, key, HTTP_IF_NONE_MATCH=etag),
        "pre-execute": wsgi_call("POST", f"sessions/{session}/tools/arkme_id_change/pre-execute",
                                 {"arguments": {"arkme_id": "alice_cycles"}}, key),
        "catalog": wsgi_call("GET", "catalog", None, key),
        "unknown session": wsgi_call("POST", "sessions/ses_nobody/tools/arkme_context/execute",
                                     {"arguments": {}}, key),
        "unknown key": wsgi_call("GET", f"sessions/{session}", None, "dsh_unknown"),
        "invalid arguments": wsgi_call("POST", execute.format("arkme_context"), {"arguments": {"x": 1}}, key),
        "malformed JSON": wsgi_call("POST", execute.format("arkme_context"), b'{"arguments": ', key),
        "unknown tool": wsgi_call("POST", execute.format("arkme_nothing"), {"arguments": {}}, key),
        "method not allowed": wsgi_call("PUT", f"sessions/{session}", None, key),
        "an MCP tools/call": wsgi_call(
            "POST", f"sessions/{session}/mcp",
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "arkme_context", "arguments": {},
                "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                          "io.modelcontextprotocol/clientCapabilities": {}}}},
            key, HTTP_ACCEPT="application/json, text/event-stream", HTTP_MCP_PROTOCOL_VERSION=MODERN,
            HTTP_MCP_METHOD="tools/call", HTTP_MCP_NAME="arkme_context"),
    }


@pytest.mark.parametrize("name", [
    "arkme_context", "candidates", "a new Idempotency-Key", "a repeated Idempotency-Key", "session view", "session view, 304", "pre-execute",
    "catalog", "unknown session", "unknown key", "invalid arguments", "malformed JSON", "unknown tool",
    "method not allowed", "an MCP tools/call",
])
def test_a_call_leaves_nothing_in_reference_cycles(calls, name):
    with requests_keep_the_connection():
        assert left_in_cycles(calls[name]) == []


def test_the_check_finds_a_view_left_in_a_cycle(calls, monkeypatch):
    """Without DshApiView's release, DRF's own cycles keep the call's objects: the check
    above would see them."""
    monkeypatch.setattr("toolregistry.api.base.DshApiView.dispatch", APIView.dispatch)
    with requests_keep_the_connection():
        left = left_in_cycles(calls["arkme_context"])
    assert {"ExecuteApi", "Request", "AgentSession"} <= set(left)
