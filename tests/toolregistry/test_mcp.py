"""The MCP surface, as the contract's "The MCP surface" section says, over both protocol eras."""
from __future__ import annotations

import json

import pytest

from arkme.accounts.models import Account
from arkme.conversations.models import Message
from galleries.models import OperationStatus, PendingOperation
from groups.refs import read_source_ref
from tests.support.errors import assert_denied, assert_error, assert_rpc_error, assert_tool_error, check_envelope
from tests.support.mcp import LEGACY, MODERN, Mcp, accept, value_of
from toolregistry.models import ApprovalGrant, ToolCall

ERAS = [MODERN, LEGACY, "2025-06-18"]

APPROVE = "arkme_id_change"


@pytest.fixture
def mcp(dsh, session) -> Mcp:
    return Mcp(dsh, session)


def session_view(dsh, session):
    return dsh.get(f"sessions/{session}").json()


@pytest.mark.parametrize("version", ERAS)
def test_tools_list_is_the_session_views_list(dsh, session, version):
    client = Mcp(dsh, session, version=version)
    view = session_view(dsh, session)
    tools = client.tools()
    assert [t["name"] for t in tools] == [t["name"] for t in view["tools"]]
    for listed, viewed in zip(tools, view["tools"], strict=True):
        assert listed["description"] == viewed["description"]
        assert listed["inputSchema"] == viewed["input_schema"]
        assert listed["annotations"] == viewed["metadata"]["annotations"]
        assert set(listed["annotations"]) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert listed["title"] and listed["outputSchema"]["type"] == "object"


def test_the_list_follows_mount_and_dispose(dsh, session, mcp):
    before = {t["name"] for t in mcp.tools()}
    assert "arkme_extension_preview_add" not in before
    dsh.put(f"sessions/{session}/phases/attachments")
    mounted = {t["name"] for t in mcp.tools()}
    assert "arkme_extension_preview_add" in mounted
    dsh.delete(f"sessions/{session}/phases/attachments")
    assert {t["name"] for t in mcp.tools()} == before


def test_the_list_follows_the_profile(dsh, world):
    atomic = dsh.open_session(world.alice, profile="atomic")["session"]
    disabled = dsh.open_session(world.alice, profile="disabled")["session"]
    assert [t["name"] for t in Mcp(dsh, atomic).tools()] == [t["name"] for t in session_view(dsh, atomic)["tools"]]
    assert Mcp(dsh, disabled).tools() == []


def test_modern_lists_are_private_and_never_outlive_a_change(dsh, session, mcp):
    """Mount and dispose change the list at any moment and nothing tells a client so (no
    ``subscriptions/listen`` stream): a hint that let it keep the list for any time would
    outlive the change, so the list is stale at once (the caching page's ``ttlMs: 0``)."""
    before = mcp.result("tools/list")
    assert before["cacheScope"] == "private" and before["ttlMs"] == 0
    assert mcp.result("server/discover")["ttlMs"] == 0
    dsh.put(f"sessions/{session}/phases/attachments")
    after = mcp.result("tools/list")
    assert len(after["tools"]) > len(before["tools"]) and after["ttlMs"] == 0


def test_instructions_are_the_sessions_guidance(dsh, session, mcp):
    prompt = session_view(dsh, session)["prompt"]
    assert prompt
    assert mcp.result("server/discover")["instructions"] == prompt
    legacy = Mcp(dsh, session, version=LEGACY).result(
        "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    assert legacy["instructions"] == prompt and legacy["protocolVersion"] == LEGACY


@pytest.mark.parametrize("version", ERAS)
def test_a_call_is_the_rest_result(dsh, session, world, version):
    rest = dsh.execute(session, "arkme_context", {}).json()["result"]
    over_mcp = value_of(Mcp(dsh, session, version=version).call("arkme_context"))
    # Signed refs carry the second they were signed in: compare what they name, not their bytes.
    def named(result):
        groups = [{**g, "source_ref": read_source_ref(g["source_ref"], account_public_id=world.alice.public_id)}
                  for g in result["groups"]]
        return {**result, "groups": groups}

    assert named(over_mcp) == named(rest)
    assert list(ToolCall.objects.values_list("surface", flat=True)[:2]) == ["mcp", "rest"]


@pytest.mark.parametrize("version", ERAS)
def test_unknown_and_invisible_tools_are_the_same_invalid_params(dsh, session, version):
    client = Mcp(dsh, session, version=version)
    errors = []
    for name in ("arkme_nope", "arkme_extension_preview_add"):  # the second is not mounted
        response = client.rpc("tools/call", {"name": name, "arguments": {}})
        errors.append(assert_rpc_error(response, 200, -32602)["message"].replace(name, "<name>"))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("version", ERAS)
def test_a_refusal_carries_the_rest_envelope(dsh, session, version):
    arguments = {"arkme_id": "x"}  # too short: refused before any approval, and an unknown argument below
    denied = assert_denied(dsh.pre_execute(session, APPROVE, arguments), "invalid_arkme_id")
    if version == MODERN:  # earlier clients bring a REST approval, which REST would not give for it
        assert assert_tool_error(Mcp(dsh, session, version=version).call(APPROVE, arguments), "invalid_arkme_id") == denied
    result = Mcp(dsh, session, version=version).call("arkme_context", {"unexpected": 1})
    assert assert_tool_error(result, "invalid_arguments") == assert_error(
        dsh.execute(session, "arkme_context", {"unexpected": 1}), 400, "invalid_arguments")


def test_approval_is_a_form_elicitation_and_runs_once(mcp, world):
    first = mcp.call(APPROVE, {"arkme_id": "alice_mcp"})
    assert first["resultType"] == "input_required"
    [(key, request)] = first["inputRequests"].items()
    assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
    assert request["params"]["message"].startswith("Change your Arkme ID?")
    assert request["params"]["requestedSchema"]["properties"]["approve"]["type"] == "boolean"
    assert "apv_" not in json.dumps(first)  # the approval itself never leaves the server
    answered = {"requestState": first["requestState"], "inputResponses": {key: {"action": "accept", "content": {"approve": True}}}}
    done = mcp.call(APPROVE, {"arkme_id": "alice_mcp"}, request_state=answered["requestState"],
                    input_responses=answered["inputResponses"])
    assert value_of(done)["account"]["arkme_id"] == "alice_mcp"
    replay = mcp.call(APPROVE, {"arkme_id": "alice_mcp"}, request_state=answered["requestState"],
                      input_responses=answered["inputResponses"])
    assert_tool_error(replay, ("approval_required", "arkme_id_already_changed"))
    assert ToolCall.objects.filter(surface="mcp", tool_name=APPROVE, outcome="ok").count() == 1


def test_a_replayed_request_state_is_refused_by_the_ledger(dsh, session, world):
    """Reorder can run twice with the same arguments, so only the ledger stops a replay."""
    mcp = Mcp(dsh, session)
    first = mcp.call(APPROVE, {"arkme_id": "alice_twice"})
    [key] = first["inputRequests"]
    yes = {key: {"action": "accept", "content": {"approve": True}}}
    assert not ApprovalGrant.objects.exists()  # asking stores nothing
    assert value_of(mcp.call(APPROVE, {"arkme_id": "alice_twice"}, request_state=first["requestState"], input_responses=yes))
    # Make the tool able to run again: only the spent approval can refuse the replay now.
    Account.objects.filter(pk=world.alice.pk).update(arkme_id_changed_at=None, arkme_id=world.alice.arkme_id)
    replay = mcp.call(APPROVE, {"arkme_id": "alice_twice"}, request_state=first["requestState"], input_responses=yes)
    assert_tool_error(replay, "approval_required", details={"reason": "used"})
    [grant] = ApprovalGrant.objects.all()
    assert grant.used_at is not None and grant.tool_name == APPROVE


def test_an_ill_formed_id_is_refused_without_asking_the_human(mcp, world):
    result = mcp.call(APPROVE, {"arkme_id": "has-dash1"})
    assert result.get("resultType", "complete") == "complete" and "inputRequests" not in result
    assert_tool_error(result, "invalid_arkme_id")
    assert not ApprovalGrant.objects.exists()
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


@pytest.mark.parametrize("answer", [
    {"action": "decline"}, {"action": "cancel"}, {"action": "accept", "content": {"approve": False}}])
def test_a_declined_approval_writes_nothing(mcp, world, answer):
    before = world.alice.arkme_id
    first = mcp.call(APPROVE, {"arkme_id": "alice_no"})
    [key] = first["inputRequests"]
    result = mcp.call(APPROVE, {"arkme_id": "alice_no"}, request_state=first["requestState"],
                      input_responses={key: answer})
    assert_tool_error(result, "approval_declined")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id == before and world.alice.arkme_id_changeable
    # The same state answered yes afterwards does not bring the declined approval back.
    again = mcp.call(APPROVE, {"arkme_id": "alice_no"}, request_state=first["requestState"],
                     input_responses={key: {"action": "accept", "content": {"approve": True}}})
    assert_tool_error(again, "approval_required")
    world.alice.refresh_from_db()
    assert world.alice.arkme_id == before
    assert ToolCall.objects.filter(surface="mcp", outcome="approval_declined").count() == 1


def test_a_request_state_is_bound_to_its_arguments_and_session(dsh, world, mcp):
    first = mcp.call(APPROVE, {"arkme_id": "alice_bound"})
    [key] = first["inputRequests"]
    yes = {key: {"action": "accept", "content": {"approve": True}}}
    other_args = mcp.rpc("tools/call", {"name": APPROVE, "arguments": {"arkme_id": "alice_other"},
                                        "requestState": first["requestState"], "inputResponses": yes})
    assert_rpc_error(other_args, 200, -32602)
    other_session = Mcp(dsh, dsh.open_session(world.alice)["session"])
    moved = other_session.rpc("tools/call", {"name": APPROVE, "arguments": {"arkme_id": "alice_bound"},
                                             "requestState": first["requestState"], "inputResponses": yes})
    assert_rpc_error(moved, 200, -32602)
    tampered = mcp.rpc("tools/call", {"name": APPROVE, "arguments": {"arkme_id": "alice_bound"},
                                      "requestState": first["requestState"][:-2] + "xx", "inputResponses": yes})
    assert_rpc_error(tampered, 200, -32602)
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


def test_an_approval_whose_card_changed_does_not_run(dsh, session, mcp, world):
    """The human approved one card; by the retry the card would say something else."""
    first = mcp.call(APPROVE, {"arkme_id": "alice_card"})
    [key] = first["inputRequests"]
    assert "will change from" in first["inputRequests"][key]["params"]["message"]
    assert dsh.approve_and_execute(session, APPROVE, {"arkme_id": "alice_other"}).status_code == 200
    result = mcp.call(APPROVE, {"arkme_id": "alice_card"}, request_state=first["requestState"],
                      input_responses={key: {"action": "accept", "content": {"approve": True}}})
    assert_tool_error(result, "approval_required", details={"reason": "card_changed"})
    world.alice.refresh_from_db()
    assert world.alice.arkme_id == "alice_other"


@pytest.mark.parametrize("version", [LEGACY, "2025-06-18", MODERN])
def test_earlier_clients_bring_a_rest_approval_in_meta(dsh, session, world, version):
    client = Mcp(dsh, session, version=version, elicitation=version == MODERN and False)
    refused = client.call(APPROVE, {"arkme_id": "alice_meta"})
    assert_tool_error(refused, "approval_required")
    decision = dsh.pre_execute(session, APPROVE, {"arkme_id": "alice_meta"}).json()
    done = client.call(APPROVE, {"arkme_id": "alice_meta"}, meta={"io.arkme/approval": decision["approval"]})
    assert value_of(done)["account"]["arkme_id"] == "alice_meta"
    again = client.call(APPROVE, {"arkme_id": "alice_meta"}, meta={"io.arkme/approval": decision["approval"]})
    assert_tool_error(again, ("approval_required", "arkme_id_already_changed"))


def test_a_rest_approval_for_other_arguments_does_not_count(dsh, session, world):
    client = Mcp(dsh, session, version=LEGACY)
    decision = dsh.pre_execute(session, APPROVE, {"arkme_id": "alice_one"}).json()
    result = client.call(APPROVE, {"arkme_id": "alice_two"}, meta={"io.arkme/approval": decision["approval"]})
    assert_tool_error(result, "approval_required", details={"reason": "other_arguments"})


def _prepared(gs):
    [path] = gs.write_many(1)
    prepared = gs.prepare(source="workspace", workspace_paths=[path])
    assert prepared.status_code == 200, prepared.content
    return prepared.json()["result"]


def test_confirm_asks_the_prepares_question_and_records_the_reply(gs):
    prepared = _prepared(gs)
    client = Mcp(gs.dsh, gs.session)
    arguments = {"action": "confirm", "extension": gs.extension, "operation": prepared["operation"]}
    first = client.call("arkme_extension_preview_add", arguments)
    assert first["resultType"] == "input_required"
    [request] = first["inputRequests"].values()
    assert request["params"]["message"] == prepared["question"]
    assert request["params"]["requestedSchema"]["properties"]["reply"]["type"] == "string"
    done = client.call_answering("arkme_extension_preview_add", arguments, accept(reply="确认"))
    assert value_of(done)["added"] == 1
    # Recorded on the operation it answers, not as a message that would answer every question.
    assert PendingOperation.objects.get(public_id=prepared["operation"]).reply == "确认"
    assert not Message.objects.exists()


@pytest.mark.parametrize("answer", [accept(reply="no"), lambda params: {"action": "decline"}])
def test_confirm_without_the_reply_leaves_the_operation_pending(gs, answer):
    prepared = _prepared(gs)
    client = Mcp(gs.dsh, gs.session)
    arguments = {"action": "confirm", "extension": gs.extension, "operation": prepared["operation"]}
    result = client.call_answering("arkme_extension_preview_add", arguments, answer)
    assert_tool_error(result, "confirmation_required")
    assert PendingOperation.objects.get(public_id=prepared["operation"]).status == OperationStatus.PENDING
    gs.say("确认")  # the conversation can still confirm it, as over REST
    assert value_of(client.call("arkme_extension_preview_add", arguments))["added"] == 1


def test_a_confirmation_already_said_is_not_asked_again(gs):
    prepared = _prepared(gs)
    gs.say("确认")
    result = Mcp(gs.dsh, gs.session).call(
        "arkme_extension_preview_add", {"action": "confirm", "extension": gs.extension, "operation": prepared["operation"]})
    assert value_of(result)["added"] == 1


def test_a_reply_confirms_only_the_operation_it_was_asked_for(gs, world):
    """Two adds wait, to two extensions. The human answers 确认 to the first one's question;
    the second one's question they never saw, so neither door may confirm it on that answer."""
    from galleries.services.extensions import extension_create

    other = extension_create(owner=world.alice, name="other-ext").public_id
    first, second = gs.write_many(2)
    asked = gs.prepare(source="workspace", workspace_paths=[first]).json()["result"]
    unseen = gs.dsh.execute(gs.session, "arkme_extension_preview_add", {
        "action": "prepare", "extension": other, "source": "workspace", "workspace_paths": [second]}).json()["result"]
    client = Mcp(gs.dsh, gs.session)
    confirm_asked = {"action": "confirm", "extension": gs.extension, "operation": asked["operation"]}
    assert value_of(client.call_answering("arkme_extension_preview_add", confirm_asked, accept(reply="确认")))["added"] == 1
    confirm_unseen = {"action": "confirm", "extension": other, "operation": unseen["operation"]}
    # Over MCP its own question is asked; through the conversation (REST, earlier clients) it waits.
    again = client.call("arkme_extension_preview_add", confirm_unseen)
    assert again["resultType"] == "input_required"
    [request] = again["inputRequests"].values()
    assert request["params"]["message"] == unseen["question"]
    assert_error(gs.confirm(unseen["operation"], extension=other), 409, "confirmation_required")
    legacy = Mcp(gs.dsh, gs.session, version=LEGACY).call("arkme_extension_preview_add", confirm_unseen)
    assert_tool_error(legacy, "confirmation_required")
    assert PendingOperation.objects.get(public_id=unseen["operation"]).status == OperationStatus.PENDING
    # The answer to its own question confirms it.
    assert value_of(client.call_answering("arkme_extension_preview_add", confirm_unseen, accept(reply="确认。")))["added"] == 1


@pytest.mark.parametrize("reply", ["确\x00认", "确认\x00", "确" * 20_001])
def test_a_reply_is_held_to_a_messages_text_rules(gs, reply):
    """A NUL (which PostgreSQL's text cannot hold) or a text past the limit: the message
    endpoint answers 400 invalid_request; the reply is the same refusal, nothing is recorded
    and the add stays pending. (A lone surrogate never reaches either: the body is refused.)"""
    said = gs.dsh.api.post(f"/dsh/v1/sessions/{gs.session}/messages", {"id": "m-bad", "text": reply}, format="json")
    assert_error(said, 400, "invalid_request", message="Invalid request: text.", details={"fields": ["text"]})
    prepared = _prepared(gs)
    arguments = {"action": "confirm", "extension": gs.extension, "operation": prepared["operation"]}
    refused = Mcp(gs.dsh, gs.session).call_answering("arkme_extension_preview_add", arguments, accept(reply=reply))
    assert_tool_error(refused, "invalid_request", message="Invalid request: reply.", details={"fields": ["reply"]})
    operation = PendingOperation.objects.get(public_id=prepared["operation"])
    assert operation.status == OperationStatus.PENDING and operation.replied_at is None
    assert not Message.objects.exists()


def test_earlier_clients_confirm_through_messages(gs):
    prepared = _prepared(gs)
    client = Mcp(gs.dsh, gs.session, version=LEGACY)
    arguments = {"action": "confirm", "extension": gs.extension, "operation": prepared["operation"]}
    assert_tool_error(client.call("arkme_extension_preview_add", arguments), "confirmation_required")
    gs.say("确认")
    assert value_of(client.call("arkme_extension_preview_add", arguments))["added"] == 1


def test_an_idempotency_key_replays_the_first_response(gs):
    client = Mcp(gs.dsh, gs.session)
    [path] = gs.write_many(1)
    arguments = {"action": "prepare", "extension": gs.extension, "source": "workspace", "workspace_paths": [path]}
    first = client.call("arkme_extension_preview_add", arguments, **{"Idempotency-Key": "k-1"})
    second = client.call("arkme_extension_preview_add", arguments, **{"Idempotency-Key": "k-1"})
    assert value_of(first) == value_of(second)
    assert PendingOperation.objects.count() == 1
    assert ToolCall.objects.filter(replayed=True, surface="mcp").count() == 1
    bad = client.call("arkme_extension_preview_add", arguments, **{"Idempotency-Key": "x" * 201})
    assert_tool_error(bad, "invalid_idempotency_key")


def test_an_idempotency_key_retry_of_an_approved_call_answers_the_first_result(dsh, session, world, mcp):
    """The answer to the approved call was lost; the host retries with the same key, either the
    answered round or the call from the start. Over REST the key replays the first result: the
    same here, before the human is asked again (by now the card says the ID already changed)."""
    key = {"Idempotency-Key": "id-change-1"}
    arguments = {"arkme_id": "alice_keyed"}
    first = mcp.call(APPROVE, arguments, **key)
    [question] = first["inputRequests"]
    yes = {question: {"action": "accept", "content": {"approve": True}}}
    done = value_of(mcp.call(APPROVE, arguments, request_state=first["requestState"], input_responses=yes, **key))
    assert done["account"]["arkme_id"] == "alice_keyed"
    answered_again = mcp.call(APPROVE, arguments, request_state=first["requestState"], input_responses=yes, **key)
    from_the_start = mcp.call(APPROVE, arguments, **key)
    assert value_of(answered_again) == done and value_of(from_the_start) == done
    assert ToolCall.objects.filter(tool_name=APPROVE, outcome="ok", replayed=False).count() == 1
    assert ToolCall.objects.filter(tool_name=APPROVE, replayed=True).count() == 2
    # The key with other arguments is the key's conflict, as over REST.
    other = mcp.call(APPROVE, {"arkme_id": "alice_other"}, **key)
    assert_tool_error(other, "idempotency_key_reused")


def test_without_a_key_it_is_401_with_a_challenge(dsh, session):
    response = dsh.api.generic("POST", f"/dsh/v1/sessions/{session}/mcp", "{}", content_type="application/json",
                               headers={"Authorization": ""})
    dsh.api.credentials()
    response = dsh.api.generic("POST", f"/dsh/v1/sessions/{session}/mcp", "{}", content_type="application/json")
    assert_error(response, 401, "not_authenticated")
    wrong = dsh.api.generic("POST", f"/dsh/v1/sessions/{session}/mcp", "{}", content_type="application/json",
                            headers={"Authorization": "Bearer nope"})
    assert_error(wrong, 401, "not_authenticated")


@pytest.mark.parametrize("version", ERAS)
def test_another_clients_unknown_or_closed_session_is_404(dsh, other_dsh, session, world, version):
    """The contract's 404, with a JSON-RPC error in the body that an SDK can surface (and the
    REST envelope in its data), answering the request's id."""
    closed = dsh.open_session(world.alice)["session"]
    dsh.delete(f"sessions/{closed}")
    for client in (Mcp(other_dsh, session, version=version), Mcp(dsh, "ses_unknown", version=version),
                   Mcp(dsh, closed, version=version)):
        response = client.post({"jsonrpc": "2.0", "id": 41, "method": "tools/list", "params": {}},
                               **{"MCP-Protocol-Version": version})
        error = assert_rpc_error(response, 404, -32600, message="Session not found")
        assert response.json()["id"] == 41
        check_envelope(error["data"], "unknown_session")


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_only_post(dsh, session, method):
    response = dsh.api.generic(method, f"/dsh/v1/sessions/{session}/mcp")
    assert_error(response, 405, "method_not_allowed")
    assert response["Allow"] == "POST"


def test_a_foreign_origin_is_403(mcp):
    assert_rpc_error(mcp.rpc("tools/list", Origin="http://evil.example"), 403, -32600)
    assert mcp.rpc("tools/list", Origin="http://localhost:3000").status_code == 200


def test_modern_requests_need_their_headers(mcp):
    response = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}},
        **{"MCP-Protocol-Version": MODERN})
    assert_rpc_error(response, 400, -32020)


@pytest.mark.parametrize("body", [b"{", b"[]", b'{"jsonrpc": "2.0", "id": 1}', b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}'])
def test_malformed_json_rpc_is_a_json_rpc_error(mcp, body):
    response = mcp.dsh.api.generic("POST", mcp.path, body, content_type="application/json")
    assert_rpc_error(response, 400, (-32700, -32600))


@pytest.mark.parametrize("version", [MODERN, LEGACY, None])
@pytest.mark.parametrize("body", [b"{", b"[]", b'{"jsonrpc": "2.0", "method": 5}', b'{"jsonrpc": "2.0", "id": null, "method": "ping"}'])
def test_an_error_without_a_known_id_leaves_id_out(mcp, body, version):
    """2025-11-25 and 2026-07-28: ``JSONRPCErrorResponse.id`` is optional and never null."""
    headers = {"MCP-Protocol-Version": version} if version else {}
    response = mcp.dsh.api.generic("POST", mcp.path, body, content_type="application/json", headers=headers)
    assert_rpc_error(response, 400, (-32700, -32600))
    assert "id" not in response.json()
    too_large = mcp.dsh.api.generic("POST", mcp.path, b" " * (2 * 1024 * 1024), content_type="application/json",
                                    headers=headers)
    assert_rpc_error(too_large, 413, -32600)
    assert "id" not in too_large.json()
    foreign = mcp.dsh.api.generic("POST", mcp.path, b"{}", content_type="application/json",
                                  headers={**headers, "Origin": "http://evil.example"})
    assert_rpc_error(foreign, 403, -32600)
    assert "id" not in foreign.json()


def test_on_2025_06_18_an_unknown_id_is_null(mcp):
    """Its schema requires ``id``; JSON-RPC 2.0 spells one that could not be read as null."""
    response = mcp.dsh.api.generic("POST", mcp.path, b"[]", content_type="application/json",
                                   headers={"MCP-Protocol-Version": "2025-06-18"})
    assert_rpc_error(response, 400, (-32700, -32600))
    assert response.json()["id"] is None


def test_2025_03_26_is_not_offered(dsh, session, mcp):
    """Its batches are not served, so a client asking for it is offered a version that is."""
    legacy = Mcp(dsh, session, version=LEGACY)
    hello = {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    for asked, offered in (("2025-03-26", LEGACY), ("2024-11-05", LEGACY), ("2025-06-18", "2025-06-18"),
                           (LEGACY, LEGACY)):
        response = legacy.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"protocolVersion": asked, **hello}})
        assert response.json()["result"]["protocolVersion"] == offered, asked
    assert "2025-03-26" not in mcp.result("server/discover")["supportedVersions"]
    refused = legacy.post({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, **{"MCP-Protocol-Version": "2025-03-26"})
    assert "2025-03-26" not in assert_rpc_error(refused, 400, -32022)["data"]["supported"]
    assert refused.json()["id"] == 7


DEEP = "[" * 5000 + "]" * 5000
SURROGATE = '"\\ud800"'


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_hostile_bodies_are_refused_and_write_nothing(dsh, session, version, figures):
    """The malformed-request catalogue, through the MCP door: never a 500, nothing written."""
    client = Mcp(dsh, session, version=version)
    head = {"MCP-Protocol-Version": version}
    if version == MODERN:
        head.update({"Mcp-Method": "tools/call", "Mcp-Name": APPROVE})
    meta = ('"_meta": {"io.modelcontextprotocol/protocolVersion": "%s", '
            '"io.modelcontextprotocol/clientCapabilities": {}}, ' % MODERN) if version == MODERN else ""
    call = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {%s"name": "%s", "arguments": %s}}'
    bodies = [
        call % (meta, APPROVE, DEEP),
        call % (meta, APPROVE, '{"arkme_id": %s}' % SURROGATE),
        call % (meta, APPROVE, '{%s: "x"}' % SURROGATE),
        (call % (meta, "arkme_context", "{}")).replace('"id": 1', '"id": %s' % SURROGATE),
        (call % (meta, APPROVE, '{"arkme_id": "abcdefgh"}'))[:-2] + ', "requestState": %s}}' % SURROGATE,
        '{"jsonrpc": "2.0", "id": 1, "method": %s}' % SURROGATE,
        DEEP,
        # Not JSON, though Python's decoder accepts them.
        *(call % (meta, "arkme_context", '{"a": %s}' % n) for n in ("NaN", "Infinity", "-Infinity", "1e999")),
        *(call % (meta, APPROVE, '{"arkme_id": %s}' % n) for n in ("NaN", "1e999")),
        # A key named twice, in the arguments or in the message around them.
        call % (meta, APPROVE, '{"arkme_id": "abcdefgh", "arkme_id": "zzzzzzzz"}'),
        (call % (meta, APPROVE, '{"arkme_id": "abcdefgh"}')).replace('"name": ', '"name": "arkme_context", "name": '),
    ]
    for body in bodies:
        response = dsh.api.generic("POST", client.path, body.encode(), content_type="application/json", headers=head)
        assert response.status_code in (200, 400), (body[:80], response.status_code)
        message = response.json()
        if "result" in message:
            assert_tool_error(message["result"], {"invalid_arguments", "invalid_request", "malformed_request"})
        else:
            assert_rpc_error(response, (200, 400), (-32700, -32600, -32602, -32020))
        figures.add("hostile_requests_refused")
    assert not ApprovalGrant.objects.exists() and not ToolCall.objects.exists() and not Message.objects.exists()


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_body_past_the_size_limit_is_a_413_json_rpc_error(dsh, session, version, settings):
    """Django's own answer would be an HTML 400 page."""
    client = Mcp(dsh, session, version=version)
    head = {"MCP-Protocol-Version": version}
    if version == MODERN:
        head.update({"Mcp-Method": "tools/call", "Mcp-Name": "arkme_context"})
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "arkme_context", "arguments": {"pad": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE}}})
    response = dsh.api.generic("POST", client.path, body.encode(), content_type="application/json", headers=head)
    assert "1 MiB" in assert_rpc_error(response, 413, -32600)["message"]
    assert not ToolCall.objects.exists()


def test_an_integral_number_written_as_a_float_is_that_integer(mcp, refs):
    """As over REST: JSON Schema's integer accepts 2.0, and the tool gets the integer 2."""
    result = mcp.call("arkme_group_member_candidates", {"source_ref": refs["approval-group"], "limit": 2.0})
    assert result["isError"] is False and len(result["structuredContent"]["candidates"]) == 2
    assert result["structuredContent"]["truncated"] is True


# Keywords whose value is one subschema, a list of them, or a map of names to them. A boolean
# is a valid JSON Schema there, but strict consumers (the MCP Inspector's ``--strict``) refuse
# it; ``additionalProperties: false`` is the draft-04 form everyone reads and stays allowed.
_ONE = ("not", "if", "then", "else", "contains", "propertyNames", "items", "additionalItems")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")


def _bare_booleans(schema, path="#"):
    if isinstance(schema, bool):
        yield path
        return
    if not isinstance(schema, dict):
        return
    for key in _ONE:
        if key in schema and not isinstance(schema[key], list):
            yield from _bare_booleans(schema[key], f"{path}/{key}")
    for key in _LIST:
        if isinstance(schema.get(key), list):
            for index, item in enumerate(schema[key]):
                yield from _bare_booleans(item, f"{path}/{key}/{index}")
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            for name, item in schema[key].items():
                yield from _bare_booleans(item, f"{path}/{key}/{name}")


def test_no_tool_schema_has_a_bare_boolean_subschema():
    from toolregistry.catalog import CATALOG
    from toolregistry.mcp.server import ERROR_ENVELOPE_SCHEMA
    from toolregistry.results import output_schema

    found = {}
    for module in CATALOG.modules:
        definition = module.definition()
        for label, schema in (("input", definition.input_schema), ("output", output_schema(definition))):
            paths = list(_bare_booleans(dict(schema)))
            if paths:
                found[f"{module.METADATA.name} {label}"] = paths
    assert not list(_bare_booleans(ERROR_ENVELOPE_SCHEMA))
    assert not found, found
    assert set(_bare_booleans({"properties": {"a": False}, "allOf": [{"then": {"properties": {"b": False}}}]})) == {
        "#/properties/a", "#/allOf/0/then/properties/b"}


def test_the_listed_schemas_have_no_bare_boolean_subschema(dsh, session):
    dsh.put(f"sessions/{session}/phases/attachments")
    for tool in Mcp(dsh, session).tools():
        assert not list(_bare_booleans(tool["inputSchema"])), tool["name"]
        assert not list(_bare_booleans(tool["outputSchema"])), tool["name"]
