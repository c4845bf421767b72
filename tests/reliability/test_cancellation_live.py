"""A client that disconnects cancels its call, on README's production stack (gunicorn with
gunicorn.conf.py, PostgreSQL, Redis, a Celery worker).

The MCP confirm of a gallery add is sent over a raw socket, which closes while the web process
waits for the blob stores (the ``blobs`` queue has no worker yet); the worker then starts, the
stores complete and the confirm reaches its commit, with nobody left to answer. Nothing may be
added, and the operation stays pending for a retry, which adds the images once.
"""
from __future__ import annotations

import json
import socket
import time

import pytest

from tests.support import images
from tests.support.stack import Stack, Web

pytestmark = [pytest.mark.postgres]

ADD = "arkme_extension_preview_add"
LEGACY = "2025-11-25"
LAST_MCP_OUTCOME = f"SELECT outcome FROM toolregistry_toolcall WHERE tool_name = '{ADD}' AND surface = 'mcp' ORDER BY id DESC LIMIT 1"  # noqa: S608


def _execute(web: Web, session: str, arguments: dict) -> tuple[int, dict]:
    status, _, body = web.call("POST", f"sessions/{session}/tools/{ADD}/execute", {"arguments": arguments})
    return status, body


def _mcp_request(port: int, key: str, session: str, arguments: dict) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": ADD, "arguments": arguments}}).encode()
    head = (f"POST /dsh/v1/sessions/{session}/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
            f"MCP-Protocol-Version: {LEGACY}\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def _one(stack: Stack, statement: str) -> str:
    rows = stack.sql(statement)
    return rows[0][0] if rows else ""


def test_a_confirm_whose_client_disconnects_while_blobs_are_stored_adds_nothing(production_stack, figures):
    stack = production_stack()
    web = stack.web()
    world = stack.world
    workspace = stack.folder / "workspaces" / "cut"
    workspace.mkdir()
    paths = []
    for index in range(3):
        (workspace / f"img{index}.png").write_bytes(images.png((400, 400), (index * 40, 90, 200)))
        paths.append(f"img{index}.png")
    status, _, opened = web.call("POST", "sessions", {"account": world["accounts"]["alice"], "workspace": "cut"})
    assert status == 201, opened
    session, extension = opened["session"], world["extensions"]["alice-ext"]
    status, _ = web.call("PUT", f"sessions/{session}/phases/attachments")[:2]
    assert status in (200, 204)
    status, prepared = _execute(web, session, {"action": "prepare", "extension": extension, "source": "workspace",
                                               "workspace_paths": paths})
    assert status == 200, prepared
    operation = prepared["result"]["operation"]
    assert web.call("POST", f"sessions/{session}/messages", {"id": "m1", "text": "确认"})[0] == 201
    items_before = int(_one(stack, "SELECT count(*) FROM galleries_galleryitem"))
    confirm = {"action": "confirm", "extension": extension, "operation": operation}

    # The confirm is sent; the client hangs up while the web process waits for the blob stores.
    client = socket.create_connection(("127.0.0.1", web.port), timeout=10)
    client.sendall(_mcp_request(web.port, stack.key, session, confirm))
    time.sleep(0.5)
    client.close()
    cut_at = time.monotonic()
    # The stores run now, and the confirm goes on to its commit, its client gone.
    stack.worker(queues="blobs")
    deadline = time.monotonic() + 60
    outcome = ""
    while time.monotonic() < deadline:
        outcome = _one(stack, LAST_MCP_OUTCOME)
        if outcome and outcome != "in_progress":
            break
        time.sleep(0.2)
    ended_after = time.monotonic() - cut_at
    added = int(_one(stack, "SELECT count(*) FROM galleries_galleryitem")) - items_before
    status_now = _one(stack, f"SELECT status FROM galleries_pendingoperation WHERE public_id = '{operation}'")  # noqa: S608
    figures.record("cancelled_confirm_items_added", added)
    figures.record("cancelled_confirm_seconds_to_end", round(ended_after, 2))
    assert outcome == "call_cancelled", (outcome, web.log_text()[-3000:])
    assert added == 0 and status_now == "pending"

    # A retry by a client that stays adds the images, once.
    status, retried = _execute(web, session, confirm)
    assert status == 200, retried
    assert retried["result"]["added"] == 3
    assert int(_one(stack, "SELECT count(*) FROM galleries_galleryitem")) - items_before == 3
