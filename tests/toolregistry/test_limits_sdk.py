"""Limits as the official MCP Python SDK sees them, both eras: a call past its limits is the
tool error ``throttled`` with ``retry_after_seconds``, and an approval it carried stays unused."""
from __future__ import annotations

from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from config.environment import parse_rate_limits
from tests.support.dsh import make_dsh
from tests.support.errors import assert_tool_error
from toolregistry import limits
from toolregistry.models import ApprovalGrant, ToolCall

MODERN = "2026-07-28"
pytestmark = pytest.mark.django_db(transaction=True)


@asynccontextmanager
async def connect(url: str, key: str, mode: str):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with Client(transport, mode="auto" if mode == MODERN else mode, cache=None) as client:
            yield client


@pytest.fixture
def host(live_server, world, settings, monkeypatch):
    monkeypatch.setattr(limits, "clock", lambda: 1_800_000_010.0)  # the same minute throughout
    settings.ARKME_RATE_LIMIT_REDIS_URL = None
    dsh = make_dsh("sdk-host")
    session = dsh.open_session(world.alice)["session"]
    return dsh, session, f"{live_server.url}/dsh/v1/sessions/{session}/mcp"


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_a_call_past_its_limit_is_the_tool_error_throttled(host, settings, mode):
    dsh, _, url = host
    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_context=1/minute/account")

    async def main():
        async with connect(url, dsh.key, mode) as client:
            return [await client.call_tool("arkme_context", {}) for _ in range(2)]

    allowed, refused = anyio.run(main)
    assert allowed.is_error is False
    error = assert_tool_error(refused, "throttled", details={"retry_after_seconds": 50})
    assert "at most 1 a minute per account" in error["message"]
    assert ToolCall.objects.filter(outcome="throttled", surface="mcp").count() == 1


def test_an_approval_from_rest_in_meta_stays_unused_when_throttled(host, settings):
    dsh, session, url = host
    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_id_change=1/minute/account")
    arguments = {"arkme_id": "alice_second"}
    approval = dsh.pre_execute(session, "arkme_id_change", arguments).json()["approval"]
    dsh.approve_and_execute(session, "arkme_id_change", {"arkme_id": "alice_first"})  # the minute's one call

    async def main():
        async with connect(url, dsh.key, "legacy") as client:
            return await client.call_tool("arkme_id_change", arguments, meta={"io.arkme/approval": approval})

    assert_tool_error(anyio.run(main), "throttled")
    assert ApprovalGrant.objects.get(arguments_digest__isnull=False, used_at__isnull=True)
