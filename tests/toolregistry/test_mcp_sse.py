"""2025-era MCP clients asked over their call's SSE stream, with the official Python SDK
(``mcp`` 2.x, ``mode="legacy"``) against a live server, as a 2025-11-25 and a 2025-06-18 client.

A pre-execute tool called without ``_meta["io.arkme/approval"]`` answers an SSE stream with one
``elicitation/create`` (the card, one boolean ``approve``); the SDK's callback answers it, the
answer is POSTed back, and the stream ends with the call's result. The 确认 of a gallery add
is asked the same way.
"""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import mcp.client.session
import pytest
from django.conf import settings

from arkme.conversations.clients import dsh_client_create
from tests.support.errors import assert_tool_error
from tests.support.images import png
from tests.support.mcp import SseCall
from tests.toolregistry.test_mcp_sdk import Human, connect, run
from toolregistry.models import ApprovalGrant, PendingQuestion, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)
ERAS = ["2025-11-25", "2025-06-18"]


@pytest.fixture(params=ERAS)
def era(request, monkeypatch):
    """The version the SDK asks for at ``initialize`` (the server agrees to either)."""
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", request.param)
    return request.param


@pytest.fixture
def host(live_server, world):
    from tests.support.dsh import make_dsh

    dsh = make_dsh("sse-host")
    root = Path(settings.ARKME_WORKSPACE_ROOT) / "ws"
    root.mkdir(parents=True, exist_ok=True)
    session = dsh.open_session(world.alice, workspace="ws")["session"]
    return dsh, dsh.key, session, root, f"{live_server.url}/dsh/v1/sessions/{session}/mcp"


def test_an_approval_asked_over_the_stream_runs_once(host, world, era):
    _, key, _, _, url = host
    human = Human(approve=True)

    async def main():
        async with connect(url, key, "legacy", human) as client:
            assert client.protocol_version == era
            return await client.call_tool("arkme_id_change", {"arkme_id": "alice_sse"})

    result = run(main)
    assert result.is_error is False, result.structured_content
    assert result.structured_content["account"]["arkme_id"] == "alice_sse"
    assert len(human.asked) == 1 and "alice_sse" in human.asked[0]  # the card
    assert ToolCall.objects.filter(tool_name="arkme_id_change", outcome="ok").count() == 1
    grant = ApprovalGrant.objects.get(tool_name="arkme_id_change")
    assert grant.used_at is not None  # the answer was used up, once
    assert not PendingQuestion.objects.exists()  # the database channel leaves nothing behind


@pytest.mark.parametrize("answer", [Human(approve=False), Human()])  # approve: false; a decline
def test_a_declined_question_writes_nothing(host, world, era, answer):
    _, key, _, _, url = host
    before = world.alice.arkme_id

    async def main():
        async with connect(url, key, "legacy", answer) as client:
            return await client.call_tool("arkme_id_change", {"arkme_id": "alice_no"})

    assert_tool_error(run(main), "approval_declined")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id == before and world.alice.arkme_id_changeable
    assert not ToolCall.objects.filter(tool_name="arkme_id_change", outcome="ok").exists()


def test_a_client_without_elicitation_is_refused_as_before(host, world, era):
    """The SDK without a callback answers the question with an error: the call goes on as
    without a stream."""
    _, key, _, _, url = host

    async def main():
        async with connect(url, key, "legacy") as client:
            return await client.call_tool("arkme_id_change", {"arkme_id": "alice_no"})

    assert_tool_error(run(main), "approval_required")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


def test_the_meta_approval_asks_nothing(host, world, era):
    dsh, key, session, _, url = host
    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_meta"}).json()
    human = Human(approve=True)

    async def main():
        async with connect(url, key, "legacy", human) as client:
            return await client.call_tool("arkme_id_change", {"arkme_id": "alice_meta"},
                                          meta={"io.arkme/approval": decision["approval"]})

    result = run(main)
    assert result.is_error is False and human.asked == []


def test_the_confirmation_is_asked_over_the_stream(host, world, era):
    dsh, key, session, root, url = host
    dsh.put(f"sessions/{session}/phases/attachments")
    for index in range(2):
        (root / f"p{index}.png").write_bytes(png((400, 400), (index * 60, 90, 30)))
    human = Human(reply="确认")
    extension = world.alice_ext.public_id

    async def main():
        async with connect(url, key, "legacy", human) as client:
            prepared = await client.call_tool("arkme_extension_preview_add", {
                "action": "prepare", "extension": extension, "source": "workspace",
                "workspace_paths": ["p0.png", "p1.png"]})
            confirmed = await client.call_tool("arkme_extension_preview_add", {
                "action": "confirm", "extension": extension, "operation": prepared.structured_content["operation"]})
            return prepared, confirmed

    prepared, confirmed = run(main)
    assert confirmed.is_error is False, confirmed.structured_content
    assert confirmed.structured_content["added"] == 2
    assert human.asked == [prepared.structured_content["question"]]
    assert len(confirmed.structured_content["gallery"]["items"]) == 2


def test_a_replayed_answer_is_refused(host, world, era):
    _, key, _, _, url = host
    posted: list[bytes] = []

    async def record(request):
        if request.method == "POST":
            posted.append(request.content)

    async def main():
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            http.event_hooks["request"] = [record]
            transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
            async with Client(transport, mode="legacy", elicitation_callback=Human(approve=True), cache=None) as client:
                return await client.call_tool("arkme_id_change", {"arkme_id": "alice_once"})

    assert run(main).is_error is False
    [answer] = [body for body in map(json.loads, posted) if "result" in body and "method" not in body]
    assert answer["result"]["action"] == "accept"
    again = httpx.post(url, content=json.dumps(answer), headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json", "MCP-Protocol-Version": era,
        "Accept": "application/json, text/event-stream"})
    assert again.status_code == 400 and again.json()["error"]["message"] == "No question is waiting for this answer."
    assert ToolCall.objects.filter(tool_name="arkme_id_change", outcome="ok").count() == 1


def test_an_unanswered_question_expires_with_a_tool_error(host, world, settings):
    """Nobody answers within the wait: the stream ends with the refusal, and the late answer is
    refused."""
    _, key, _, _, url = host
    settings.ARKME_MCP_ANSWER_WAIT_SECONDS = 1
    settings.ARKME_MCP_HEARTBEAT_SECONDS = 1
    call = SseCall(url, key, "arkme_id_change", {"arkme_id": "alice_late"})
    try:
        question = call.event()
        assert question["method"] == "elicitation/create"
        final = call.event()
        assert_tool_error(final["result"], "approval_required")
        assert final["result"]["structuredContent"]["error"]["details"]["reason"] == "expired"
        assert call.answer(url, question, {"action": "accept", "content": {"approve": True}}).status_code == 400
    finally:
        call.close()
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable and not PendingQuestion.objects.exists()


def test_only_the_client_and_session_asked_may_answer(host, world):
    dsh, key, _, _, url = host
    other_session = dsh.open_session(world.alice)["session"]
    _, other_key = dsh_client_create(name="someone-else")
    yes = {"action": "accept", "content": {"approve": True}}
    call = SseCall(url, key, "arkme_id_change", {"arkme_id": "alice_mine"})
    try:
        question = call.event()
        # Another client's key on this session: the session is not found for it.
        foreign = SseCall.answer(_as(call, other_key), url, question, yes)
        assert foreign.status_code == 404
        # This client, in its other session: no such question there.
        elsewhere = call.answer(url.replace(url.split("/")[-2], other_session), question, yes)
        assert elsewhere.status_code == 400
        # Not a well-formed answer: refused, and the question still waits for the real one.
        assert call.answer(url, question, {"action": "maybe"}).status_code == 400
        assert call.answer(url, question, yes).status_code == 202
        assert call.event()["result"]["isError"] is False
    finally:
        call.close()
    assert ToolCall.objects.filter(tool_name="arkme_id_change", outcome="ok").count() == 1


def _as(call: SseCall, key: str) -> SseCall:
    """The same call's answering side, with another client key."""
    other = object.__new__(SseCall)
    other.headers = {**call.headers, "Authorization": f"Bearer {key}"}
    return other


def test_a_declined_confirmation_leaves_the_operation_pending(host, world, era):
    dsh, key, session, root, url = host
    dsh.put(f"sessions/{session}/phases/attachments")
    (root / "p0.png").write_bytes(png((400, 400), (10, 90, 30)))
    extension = world.alice_ext.public_id

    async def main():
        async with connect(url, key, "legacy", Human(reply="不要")) as client:
            prepared = await client.call_tool("arkme_extension_preview_add", {
                "action": "prepare", "extension": extension, "source": "workspace", "workspace_paths": ["p0.png"]})
            operation = prepared.structured_content["operation"]
            refused = await client.call_tool("arkme_extension_preview_add", {
                "action": "confirm", "extension": extension, "operation": operation})
            return refused

    assert_tool_error(run(main), "confirmation_required")


def test_without_a_store_to_hear_from_the_call_is_refused_as_before(host, world, monkeypatch):
    """The answer's store (Redis) is unreachable when the question would be asked: the call
    answers as for a client that cannot be asked, in plain JSON."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    import toolregistry.mcp.stream as stream

    def unreachable(*args, **kwargs):
        raise RedisConnectionError("down")

    monkeypatch.setattr(stream, "question_opened", unreachable)
    _, key, _, _, url = host
    call = SseCall(url, key, "arkme_id_change", {"arkme_id": "alice_down"})
    try:
        assert call.content_type.startswith("application/json")
        body = call.body()
    finally:
        call.close()
    assert_tool_error(body["result"], "approval_required")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable
