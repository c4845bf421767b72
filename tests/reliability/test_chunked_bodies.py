"""Under a real gunicorn, a request body sent in chunks (no Content-Length) is read whole."""
from __future__ import annotations

import http.client
import json

import pytest

from tests.support.errors import Answer, assert_error
from tests.support.live import deployment, gunicorn


@pytest.fixture
def served(tmp_path):
    env, world = deployment(tmp_path)
    process, port = gunicorn(env)
    yield port, world
    process.terminate()
    process.wait(timeout=15)


def chunked_answer(port: int, path: str, pieces: list[bytes], headers: dict[str, str]) -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", path, iter(pieces), headers, encode_chunked=True)
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    return Answer(response.status, response.headers, raw)


def chunked(port: int, path: str, pieces: list[bytes], headers: dict[str, str]) -> tuple[int, dict]:
    answered = chunked_answer(port, path, pieces, headers)
    return answered.status_code, json.loads(answered.content)


def test_chunked_bodies_reach_the_api_and_the_mcp_endpoint(served):
    port, world = served
    auth = {"Authorization": f"Bearer {world['dsh_key']}", "Content-Type": "application/json"}
    status, opened = chunked(port, "/dsh/v1/sessions",
                             [b'{"account": ', json.dumps(world["accounts"]["alice"]).encode(), b"}"], auth)
    assert status == 201, opened
    session = opened["session"]
    status, body = chunked(port, f"/dsh/v1/sessions/{session}/tools/arkme_context/execute",
                           [b'{"argu', b'ments": {}}'], auth)
    assert status == 200 and body["result"]["account"]["display_name"]
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
    raw = json.dumps(message).encode()
    status, body = chunked(port, f"/dsh/v1/sessions/{session}/mcp", [raw[:10], raw[10:]], {
        **auth, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list"})
    assert status == 200 and body["id"] == 7
    assert "arkme_context" in [tool["name"] for tool in body["result"]["tools"]]
    too_large = chunked_answer(port, f"/dsh/v1/sessions/{session}/messages",
                               [b'{"id": "m1", "text": "', b"x" * (2 * 1024 * 1024), b'"}'], auth)
    assert_error(too_large, 413, "payload_too_large")
