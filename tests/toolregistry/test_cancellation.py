"""A call whose client went away before its effect committed writes nothing (MCP: a client's
disconnect is the cancellation of its request; REST's callers go away the same way).

The door's probe is gunicorn's client socket in the WSGI environ; here a socket pair stands in
for the connection, its client side closed or left open. (tests/reliability covers the same
on a real gunicorn.)"""
from __future__ import annotations

import json
import socket

import pytest

from galleries.models import GalleryItem, OperationStatus, PendingOperation
from tests.support.errors import assert_error, assert_tool_error
from tests.support.mcp import LEGACY, Mcp, value_of
from toolregistry.models import IdempotencyRecord, ToolCall


@pytest.fixture
def connection():
    """``connection(closed)``: the server side of a client connection, as gunicorn hands it."""
    made = []

    def make(closed: bool) -> socket.socket:
        server, client = socket.socketpair()
        made.extend([server, client])
        if closed:
            client.close()
        return server

    yield make
    for sock in made:
        sock.close()


def _prepared(gs):
    paths = gs.write_many(3)
    prepared = gs.prepare(source="workspace", workspace_paths=paths).json()["result"]
    gs.say("确认")
    return prepared["operation"]


def test_a_confirm_whose_client_left_adds_nothing_and_stays_pending(gs, connection):
    operation = _prepared(gs)
    gone = gs.dsh.execute(gs.session, "arkme_extension_preview_add",
                          {"action": "confirm", "extension": gs.extension, "operation": operation},
                          HTTP_IDEMPOTENCY_KEY="confirm-1", **{"gunicorn.socket": connection(closed=True)})
    assert_error(gone, 499, "call_cancelled")
    assert not GalleryItem.objects.exists()
    assert PendingOperation.objects.get(public_id=operation).status == OperationStatus.PENDING
    assert not IdempotencyRecord.objects.filter(key="confirm-1").exists()  # the key is free for the retry
    assert ToolCall.objects.filter(outcome="call_cancelled", http_status=499).count() == 1
    # The retry, with the same key and a client that stays, does the work once.
    retried = gs.dsh.execute(gs.session, "arkme_extension_preview_add",
                             {"action": "confirm", "extension": gs.extension, "operation": operation},
                             HTTP_IDEMPOTENCY_KEY="confirm-1", **{"gunicorn.socket": connection(closed=False)})
    assert retried.status_code == 200 and retried.json()["result"]["added"] == 3
    assert GalleryItem.objects.count() == 3


def test_over_mcp_too(gs, connection):
    operation = _prepared(gs)
    client = Mcp(gs.dsh, gs.session, version=LEGACY)
    arguments = {"action": "confirm", "extension": gs.extension, "operation": operation}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "arkme_extension_preview_add", "arguments": arguments}}
    gone = gs.dsh.api.generic("POST", client.path, json.dumps(body), content_type="application/json",
                              headers={"MCP-Protocol-Version": LEGACY},
                              **{"gunicorn.socket": connection(closed=True)})
    assert_tool_error(gone.json()["result"], "call_cancelled")
    assert not GalleryItem.objects.exists()
    assert value_of(client.call("arkme_extension_preview_add", arguments))["added"] == 3


def test_an_approved_write_whose_client_left_keeps_its_approval_unused(dsh, session, world, connection):
    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_gone"}).json()
    gone = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_gone"}, approval=decision["approval"],
                       **{"gunicorn.socket": connection(closed=True)})
    assert_error(gone, 499, "call_cancelled")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id != "alice_gone" and world.alice.arkme_id_changeable
    done = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_gone"}, approval=decision["approval"])
    assert done.status_code == 200, done.content


def test_a_read_is_never_cancelled(dsh, session, connection):
    """Only writes ask; a read answers whoever is there."""
    assert dsh.execute(session, "arkme_context", {}, **{"gunicorn.socket": connection(closed=True)}).status_code == 200
