"""Execute and pre-execute: visibility, arguments, approvals, idempotency and the audit."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from arkme.accounts.models import Account
from tests.support.errors import assert_denied, assert_error
from toolregistry.models import ApprovalGrant, IdempotencyRecord, ToolCall

# --- visibility ------------------------------------------------------------------------------

def test_unknown_tool_is_404_unknown_tool(dsh, session):
    response = dsh.execute(session, "arkme_nothing", {})
    assert_error(response, 404, "unknown_tool")


def test_tool_invisible_in_the_profile_is_404(dsh, world):
    disabled = dsh.open_session(world.alice, profile="disabled")["session"]
    response = dsh.execute(disabled, "arkme_context", {})
    assert_error(response, 404, "unknown_tool")
    assert_error(dsh.pre_execute(disabled, "arkme_id_change", {"arkme_id": "alice_new"}), 404, "unknown_tool")


# --- arguments -------------------------------------------------------------------------------

def test_unknown_arguments_are_rejected(dsh, session):
    response = dsh.execute(session, "arkme_context", {"verbose": True})
    assert assert_error(response, 400, "invalid_arguments")["details"]["fields"] == ["verbose"]


@pytest.mark.parametrize("arguments,field", [
    ({}, "arkme_id"),
    ({"arkme_id": 5}, "arkme_id"),
    ({"arkme_id": ""}, "arkme_id"),
    ({"arkme_id": "alice_new", "x": 1}, "x"),
])
def test_wrong_arguments_name_the_field(dsh, session, arguments, field):
    response = dsh.execute(session, "arkme_id_change", arguments, approval="apv_whatever")
    assert field in assert_error(response, 400, "invalid_arguments")["details"]["fields"]
    assert Account.objects.filter(arkme_id_changed_at__isnull=False).count() == 0


@pytest.mark.parametrize("body,code", [
    ({"arguments": []}, "invalid_arguments"),
    ({"arguments": "x"}, "invalid_arguments"),
    ({}, "invalid_request"),
    ({"arguments": {}, "extra": 1}, "invalid_request"),
])
def test_malformed_execute_body_is_400(dsh, session, body, code):
    response = dsh.post(f"sessions/{session}/tools/arkme_context/execute", body)
    assert_error(response, 400, code)


def test_pre_execute_with_bad_arguments_denies(dsh, session):
    assert_denied(dsh.pre_execute(session, "arkme_id_change", {"arkme_id": 5}), "invalid_arguments")
    assert ApprovalGrant.objects.count() == 0


# --- approvals -------------------------------------------------------------------------------

def test_read_tool_is_allowed_without_approval(dsh, session):
    assert dsh.pre_execute(session, "arkme_context", {}).json() == {"decision": "allow"}


def test_pre_execute_tool_asks_with_a_card(dsh, session, world):
    body = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).json()
    assert body["decision"] == "ask"
    assert body["approval"].startswith("apv_")
    assert "alice_2026" in body["card"]["body"] and world.alice.arkme_id in body["card"]["body"]
    grant = ApprovalGrant.objects.get()
    assert body["approval"] not in (grant.token_hash, grant.arguments_digest)


def test_execute_without_approval_is_403(dsh, session):
    response = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_2026"})
    assert_error(response, 403, "approval_required")


def test_approval_is_single_use(dsh, session):
    args = {"arkme_id": "alice_2026"}
    approval = dsh.pre_execute(session, "arkme_id_change", args).json()["approval"]
    assert dsh.execute(session, "arkme_id_change", args, approval=approval).status_code == 200
    again = dsh.execute(session, "arkme_id_change", args, approval=approval)
    assert_error(again, 403, "approval_required", details={"reason": "used"})


def test_approval_for_other_arguments_is_403(dsh, session, world):
    approval = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).json()["approval"]
    response = dsh.execute(session, "arkme_id_change", {"arkme_id": "mallory_1"}, approval=approval)
    assert_error(response, 403, "approval_required", details={"reason": "other_arguments"})
    world.alice.refresh_from_db()
    assert world.alice.arkme_id_changeable


def test_approval_from_another_session_is_403(dsh, session, world):
    other = dsh.open_session(world.alice)["session"]
    args = {"arkme_id": "alice_2026"}
    approval = dsh.pre_execute(other, "arkme_id_change", args).json()["approval"]
    response = dsh.execute(session, "arkme_id_change", args, approval=approval)
    assert_error(response, 403, "approval_required", details={"reason": "invalid"})


def test_expired_approval_is_403(dsh, session):
    args = {"arkme_id": "alice_2026"}
    approval = dsh.pre_execute(session, "arkme_id_change", args).json()["approval"]
    ApprovalGrant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = dsh.execute(session, "arkme_id_change", args, approval=approval)
    assert_error(response, 403, "approval_required", details={"reason": "expired"})


def test_forged_approval_is_403(dsh, session):
    response = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}, approval="apv_" + "A" * 43)
    assert_error(response, 403, "approval_required", details={"reason": "invalid"})


def test_failed_call_leaves_its_approval_unused(dsh, session, world):
    Account.objects.filter(pk=world.bob.pk).update(arkme_id="taken_id")
    args = {"arkme_id": "Taken_ID"}
    approval = dsh.pre_execute(session, "arkme_id_change", args).json()["approval"]
    response = dsh.execute(session, "arkme_id_change", args, approval=approval)
    assert_error(response, 409, "arkme_id_taken")
    assert ApprovalGrant.objects.get().used_at is None


# --- idempotency -----------------------------------------------------------------------------

def test_idempotent_replay_returns_the_first_response(dsh, session, world):
    args = {"arkme_id": "alice_2026"}
    approval = dsh.pre_execute(session, "arkme_id_change", args).json()["approval"]
    first = dsh.execute(session, "arkme_id_change", args, approval=approval, HTTP_IDEMPOTENCY_KEY="k1")
    second = dsh.execute(session, "arkme_id_change", args, approval=approval, HTTP_IDEMPOTENCY_KEY="k1")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert ToolCall.objects.filter(replayed=True).count() == 1


def test_idempotency_key_with_other_arguments_is_409(dsh, session):
    dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k1")
    response = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}, HTTP_IDEMPOTENCY_KEY="k1")
    assert_error(response, 409, "idempotency_key_reused")


def test_idempotency_keys_are_scoped_to_the_session(dsh, session, world):
    other = dsh.open_session(world.alice)["session"]
    assert dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k1").status_code == 200
    assert_error(dsh.execute(other, "arkme_id_change", {"arkme_id": "x_valid1"}, HTTP_IDEMPOTENCY_KEY="k1"),
                 403, "approval_required")


def test_error_responses_replay_too(dsh, session):
    first = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}, HTTP_IDEMPOTENCY_KEY="k1")
    assert_error(first, 403, "approval_required")
    approval = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}).json()["approval"]
    second = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_2026"}, approval=approval,
                         HTTP_IDEMPOTENCY_KEY="k1")
    assert second.json() == first.json()  # the key already answered; a new key runs the call
    assert_error(second, 403, "approval_required")


def test_bad_idempotency_key_is_400(dsh, session):
    response = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="x" * 201)
    assert_error(response, 400, "invalid_idempotency_key")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_do_the_work_once(postgres, world):
    from tests.support.concurrency import race
    from tests.support.dsh import make_dsh

    dsh = make_dsh()
    session = dsh.open_session(world.alice)["session"]
    args = {"arkme_id": "alice_2026"}
    approval = dsh.pre_execute(session, "arkme_id_change", args).json()["approval"]

    def call():
        from rest_framework.test import APIClient
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
        response = api.post(f"/dsh/v1/sessions/{session}/tools/arkme_id_change/execute",
                            {"arguments": args, "approval": approval}, format="json", HTTP_IDEMPOTENCY_KEY="same")
        return response.status_code, response.json()

    results = [value for _, value in race([call] * 4)]
    assert [status for status, _ in results] == [200] * 4
    assert all(body == results[0][1] for _, body in results)
    assert ApprovalGrant.objects.filter(used_at__isnull=False).count() == 1
    assert ToolCall.objects.filter(replayed=False, outcome="ok").count() == 1
    assert IdempotencyRecord.objects.count() == 1


# --- audit -----------------------------------------------------------------------------------

def test_every_call_is_audited_without_arguments(dsh, session):
    dsh.execute(session, "arkme_context", {})
    dsh.execute(session, "arkme_nothing", {})
    dsh.execute(session, "arkme_id_change", {"arkme_id": "secret_value1"})
    calls = list(ToolCall.objects.order_by("id").values("tool_name", "tool_id", "outcome", "http_status"))
    assert calls == [
        {"tool_name": "arkme_context", "tool_id": "arkme.context@1", "outcome": "ok", "http_status": 200},
        {"tool_name": "arkme_nothing", "tool_id": "", "outcome": "unknown_tool", "http_status": 404},
        {"tool_name": "arkme_id_change", "tool_id": "arkme.id.change@1", "outcome": "approval_required", "http_status": 403},
    ]
    stored = " ".join(str(v) for row in ToolCall.objects.values() for v in row.values())
    assert "secret_value1" not in stored


def test_unexpected_error_is_500_without_internals(dsh, session, monkeypatch):
    from arkme.accounts import adapters

    def boom(self, **kwargs):
        raise RuntimeError("/secret/path/to/db password=hunter2")

    monkeypatch.setattr(adapters.AccountAdapter, "account_view", boom)
    dsh.api.raise_request_exception = False
    response = dsh.execute(session, "arkme_context", {})
    error = assert_error(response, 500, "internal_error", message="Something went wrong on our side.")
    assert "details" not in error
    assert ToolCall.objects.get().outcome == "server_error"


def test_server_error_releases_the_idempotency_key(dsh, session, monkeypatch):
    from arkme.accounts import adapters

    original = adapters.AccountAdapter.account_view
    monkeypatch.setattr(adapters.AccountAdapter, "account_view", lambda self, **kw: 1 / 0)
    assert_error(dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k"), 500, "internal_error")
    monkeypatch.setattr(adapters.AccountAdapter, "account_view", original)
    assert dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k").status_code == 200


def test_purge_forgets_expired_idempotency_keys(dsh, session, settings):
    from django.core.management import call_command

    dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="old")
    dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="new")
    IdempotencyRecord.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(seconds=settings.ARKME_IDEMPOTENCY_TTL_SECONDS + 1))
    call_command("arkme_sessions", "purge", stdout=__import__("io").StringIO())
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]
    # An expired key may be used again, for other arguments too.
    assert_error(dsh.execute(session, "arkme_id_change", {"arkme_id": "x_valid1"}, HTTP_IDEMPOTENCY_KEY="old"),
                 403, "approval_required")


def _raw_execute(dsh, session, body: bytes, content_type: str, **extra):
    return dsh.api.generic("POST", dsh.url(f"sessions/{session}/tools/arkme_context/execute"), body,
                           content_type=content_type, **extra)


@pytest.mark.parametrize("body", [
    b'{"arguments": {}}',
    b'{"arguments": {}, "arguments": {}}',  # a key named twice
    b'{"arguments": NaN}',
    b'{"arguments": {}',
    b'',
    b'[]',
    b'{"arguments": {"x": "\\ud800"}}',  # a lone surrogate
])
def test_a_json_body_reads_the_same_with_or_without_media_type_parameters(dsh, session, body, monkeypatch):
    """``application/json`` exactly is read without DRF's parser selection; with a parameter it
    goes through DRF. Both must answer every body alike."""
    # The answer carries signed refs stamped to the second; the two calls may straddle one.
    from django.core import signing
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: "1xaRPp")
    plain = _raw_execute(dsh, session, body, "application/json")
    with_charset = _raw_execute(dsh, session, body, "application/json; charset=utf-8")
    assert plain.status_code == with_charset.status_code
    assert plain.json() == with_charset.json()
    assert plain.status_code == (200 if body == b'{"arguments": {}}' else 400)


def test_a_body_of_another_media_type_is_415(dsh, session):
    response = _raw_execute(dsh, session, b'{"arguments": {}}', "text/plain")
    assert_error(response, 415, "unsupported_media_type")


def test_the_result_is_rendered_as_negotiated(dsh, session):
    compact = _raw_execute(dsh, session, b'{"arguments": {}}', "application/json")
    indented = _raw_execute(dsh, session, b'{"arguments": {}}', "application/json",
                            HTTP_ACCEPT="application/json; indent=2")
    assert compact["Content-Type"] == indented["Content-Type"] == "application/json"
    assert b"\n" not in compact.content and b'{"result":{' in compact.content
    assert indented.content.startswith(b'{\n  "result": {')
    assert json.loads(indented.content) == json.loads(compact.content)
    refused = _raw_execute(dsh, session, b'{"arguments": {}}', "application/json", HTTP_ACCEPT="text/html")
    assert_error(refused, 406, "not_acceptable")
