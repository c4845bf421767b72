"""The official MCP Python SDK (``mcp`` 2.x) as a host would use it, against a live server.

Both eras: ``2026-07-28`` (stateless, approvals and 确认 as elicitations answered by the
SDK's callback) and the ``2025-11-25`` handshake (approvals from REST in ``_meta``).
"""
from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from django.conf import settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from arkme.conversations.clients import dsh_client_create
from tests.support.dsh import make_dsh
from tests.support.errors import assert_tool_error
from tests.support.images import png
from toolregistry.models import ToolCall

MODERN = "2026-07-28"
pytestmark = pytest.mark.django_db(transaction=True)


class Human:
    """The person behind the host: answers each form elicitation, and remembers what it saw."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        fields = set(params.requested_schema["properties"])
        content = {name: value for name, value in self.answers.items() if name in fields}
        if not content:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)


@asynccontextmanager
async def connect(url: str, key: str, mode: str = MODERN, human: Human | None = None):
    """``MODERN`` connects as a 2026-07-28 host does by default (``server/discover`` first);
    ``legacy`` with the ``initialize`` handshake."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        sdk_mode = "auto" if mode == MODERN else mode
        async with Client(transport, mode=sdk_mode, elicitation_callback=human, cache=None) as client:
            assert (client.protocol_version == MODERN) == (mode == MODERN), client.protocol_version
            yield client


@pytest.fixture
def host(live_server, world):
    """A DSH client, alice's session with the attachments phase mounted, and the MCP URL."""
    dsh = make_dsh("sdk-host")
    key = dsh.key
    root = Path(settings.ARKME_WORKSPACE_ROOT) / "ws"
    root.mkdir(parents=True, exist_ok=True)
    session = dsh.open_session(world.alice, workspace="ws")["session"]
    return dsh, key, session, root, f"{live_server.url}/dsh/v1/sessions/{session}/mcp"


def run(coroutine_function, *args):
    return anyio.run(coroutine_function, *args)


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_lists_follow_profile_and_phase(host, mode):
    dsh, key, session, _, url = host

    async def listing():
        async with connect(url, key, mode) as client:
            return (await client.list_tools()).tools, client.instructions

    # The database is reached from this thread only, between connections (it is SQLite in memory).
    before, instructions = run(listing)
    dsh.put(f"sessions/{session}/phases/attachments")
    mounted, _ = run(listing)
    dsh.delete(f"sessions/{session}/phases/attachments")
    after, _ = run(listing)
    before, after = [tool.name for tool in before], [tool.name for tool in after]
    assert before == [t["name"] for t in dsh.get(f"sessions/{session}").json()["tools"]]
    assert "arkme_extension_preview_add" in [tool.name for tool in mounted] and after == before
    add = next(tool for tool in mounted if tool.name == "arkme_extension_preview_add")
    assert add.title and add.output_schema and add.annotations.read_only_hint is False
    assert instructions == dsh.get(f"sessions/{session}").json()["prompt"]


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_context_call(host, mode):
    dsh, key, session, _, url = host

    async def main():
        async with connect(url, key, mode) as client:
            return await client.call_tool("arkme_context", {})

    result = run(main)
    assert result.is_error is False
    rest = dsh.execute(session, "arkme_context", {}).json()["result"]
    over_mcp = result.structured_content
    assert (over_mcp["account"], over_mcp["extensions"]) == (rest["account"], rest["extensions"])
    assert [g["name"] for g in over_mcp["groups"]] == [g["name"] for g in rest["groups"]]
    assert set(ToolCall.objects.values_list("surface", flat=True)) == {"mcp", "rest"}


def test_the_whole_gallery_flow_with_elicitations(host, world):
    dsh, key, session, root, url = host
    dsh.put(f"sessions/{session}/phases/attachments")
    for index in range(3):
        (root / f"p{index}.png").write_bytes(png((400, 400), (index * 60, 90, 30)))
    human = Human(reply="确认", approve=True)
    extension = world.alice_ext.public_id

    async def main():
        async with connect(url, key, MODERN, human) as client:
            prepared = await client.call_tool("arkme_extension_preview_add", {
                "action": "prepare", "extension": extension, "source": "workspace",
                "workspace_paths": ["p0.png", "p1.png", "p2.png"]})
            assert prepared.is_error is False, prepared.structured_content
            confirmed = await client.call_tool("arkme_extension_preview_add", {
                "action": "confirm", "extension": extension, "operation": prepared.structured_content["operation"]})
            gallery = confirmed.structured_content["gallery"]
            items = [item["item"] for item in gallery["items"]]
            reordered = await client.call_tool("arkme_extension_preview_reorder", {
                "extension": extension, "order": items[::-1], "revision": gallery["revision"]})
            deleted = await client.call_tool("arkme_extension_preview_delete", {
                "extension": extension, "items": items[:1], "revision": gallery["revision"] + 1})
            return prepared, confirmed, reordered, deleted

    prepared, confirmed, reordered, deleted = run(main)
    assert confirmed.structured_content["added"] == 3
    assert human.asked[0] == prepared.structured_content["question"]
    assert reordered.is_error is False and deleted.is_error is False
    assert len(human.asked) == 3  # the 确认, then one approval card each for reorder and delete
    assert len(deleted.structured_content["gallery"]["items"]) == 2


def test_a_declined_approval_writes_nothing(host, world):
    _, key, _, _, url = host
    before = world.alice.arkme_id

    async def main():
        async with connect(url, key, MODERN, Human(approve=False)) as client:
            return await client.call_tool("arkme_id_change", {"arkme_id": "alice_sdk"})

    result = run(main)
    assert_tool_error(result, "approval_declined")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id == before and world.alice.arkme_id_changeable


def test_a_replayed_request_state_is_refused(host, world):
    _, key, _, _, url = host

    async def main():
        # The callback is there to advertise elicitation; the test drives the rounds itself.
        async with connect(url, key, MODERN, Human()) as client:
            await client.list_tools()
            asked = await client.session.call_tool("arkme_id_change", {"arkme_id": "alice_once"},
                                                   allow_input_required=True)
            [key_] = asked.input_requests
            yes = {key_: types.ElicitResult(action="accept", content={"approve": True})}
            first = await client.session.call_tool("arkme_id_change", {"arkme_id": "alice_once"},
                                                   request_state=asked.request_state, input_responses=yes)
            replay = await client.session.call_tool("arkme_id_change", {"arkme_id": "alice_once"},
                                                    request_state=asked.request_state, input_responses=yes)
            return first, replay

    first, replay = run(main)
    assert first.is_error is False
    assert_tool_error(replay, "approval_required")
    assert ToolCall.objects.filter(tool_name="arkme_id_change", outcome="ok").count() == 1


def test_the_groups_flow(host, world):
    dsh, key, session, _, url = host

    async def main():
        async with connect(url, key, MODERN, Human(approve=True)) as client:
            context = await client.call_tool("arkme_context", {})
            source = next(g["source_ref"] for g in context.structured_content["groups"] if g["name"] == "approval-group")
            found = await client.call_tool("arkme_group_member_candidates", {"source_ref": source})
            refs = [c["candidate_ref"] for c in found.structured_content["candidates"]]
            added = await client.call_tool("arkme_group_member_add", {"source_ref": source, "candidate_refs": refs})
            return found, added

    found, added = run(main)
    assert found.is_error is False and found.structured_content["candidates"]
    assert added.is_error is False, added.structured_content
    assert ToolCall.objects.filter(surface="mcp", tool_name="arkme_group_member_add", outcome="ok").count() == 1


def test_legacy_clients_bring_the_rest_approval(host):
    dsh, key, session, _, url = host
    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_legacy"}).json()

    async def main():
        async with connect(url, key, "legacy") as client:
            without = await client.call_tool("arkme_id_change", {"arkme_id": "alice_legacy"})
            with_meta = await client.call_tool("arkme_id_change", {"arkme_id": "alice_legacy"},
                                               meta={"io.arkme/approval": decision["approval"]})
            return without, with_meta

    without, with_meta = run(main)
    assert_tool_error(without, "approval_required")
    assert with_meta.is_error is False and with_meta.structured_content["account"]["arkme_id"] == "alice_legacy"


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_a_foreign_session_is_refused(host, world, mode):
    dsh, key, _, _, url = host
    other, other_key = dsh_client_create(name="someone-else")

    async def main():
        async with connect(url, other_key, mode) as client:
            await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as raised:
        run(main)
    # The HTTP 404 carries a JSON-RPC error, which the SDK surfaces as it is (without one it
    # would make up a "Not Found" of its own).
    assert [str(error) for error in _leaves(raised.value)] == ["Session not found"]
    assert all(isinstance(error, MCPError) for error in _leaves(raised.value))
    assert not ToolCall.objects.exists()


def _leaves(group: BaseException) -> list[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in _leaves(inner)]
    return [group]


def test_the_readme_python_host_runs_as_written(host, capsys):
    """README's MCP example, run against the live server with only its URL and key filled in."""
    _, key, _, _, url = host
    readme = (Path(settings.BASE_DIR) / "README.md").read_text()
    section = readme[readme.index("## The MCP surface"):]
    code = section[section.index("```python") + len("```python"):section.index("```\n", section.index("```python"))]
    code = code.replace('"http://127.0.0.1:8000/dsh/v1/sessions/SESSION/mcp", "DSH_KEY"', f'"{url}", "{key}"')
    assert url in code
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - the README's own code
    printed = capsys.readouterr().out
    assert "arkme_context" in printed and "'display_name': 'Alice'" in printed


@pytest.mark.parametrize("profile", ["business", "atomic", "hybrid", "disabled"])
def test_lists_follow_the_profile(live_server, world, profile):
    dsh = make_dsh(f"profile-{profile}")
    key = dsh.key
    session = dsh.open_session(world.alice, profile=profile)["session"]
    url = f"{live_server.url}/dsh/v1/sessions/{session}/mcp"

    async def listing():
        async with connect(url, key, MODERN) as sdk:
            return [tool.name for tool in (await sdk.list_tools()).tools]

    assert run(listing) == [t["name"] for t in dsh.get(f"sessions/{session}").json()["tools"]]
