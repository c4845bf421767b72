"""Malformed requests are 400 in the contract's envelope, never 500, and write nothing."""
from __future__ import annotations

import pytest

from arkme.conversations.models import AgentSession, CapturedAttachment, Message
from tests.support.errors import assert_error, assert_rpc_error
from toolregistry.models import ApprovalGrant, ToolCall

DEEP = "[" * 5000 + "]" * 5000
SURROGATE = '"\\ud800"'
# Python's decoder accepts these; none is JSON, and PostgreSQL's JSON columns refuse them.
NOT_JSON_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e999", "-1e999")


def body_cases(session: str, account: str) -> list[tuple[str, str]]:
    tools = f"sessions/{session}/tools"
    return [
        ("sessions", '{"account": %s}' % DEEP),
        ("sessions", '{"account": %s}' % SURROGATE),
        ("sessions", '{"account": "%s", "workspace": %s}' % (account, SURROGATE)),
        (f"{tools}/arkme_id_change/pre-execute", '{"arguments": %s}' % DEEP),
        (f"{tools}/arkme_id_change/pre-execute", '{"arguments": {"arkme_id": %s}}' % SURROGATE),
        (f"{tools}/arkme_id_change/execute", '{"arguments": {"arkme_id": %s}}' % SURROGATE),
        (f"{tools}/arkme_id_change/execute", '{"arguments": {"arkme_id": "abcdef"}, "approval": %s}' % SURROGATE),
        (f"{tools}/arkme_context/execute", '{"arguments": {%s: 1}}' % SURROGATE),
        (f"{tools}/arkme_extension_preview_add/execute",
         '{"arguments": {"action": "prepare", "extension": "x", "source": "workspace", "workspace_paths": [%s]}}'
         % SURROGATE),
        (f"sessions/{session}/messages", '{"id": %s, "text": "x"}' % SURROGATE),
        (f"sessions/{session}/messages", '{"id": "m1", "text": %s}' % SURROGATE),
        (f"sessions/{session}/messages", DEEP),
        *((f"sessions/{session}/messages", '{"id": "m1", "text": %s}' % n) for n in NOT_JSON_NUMBERS),
        *((f"{tools}/arkme_context/execute", '{"arguments": {"a": %s}}' % n) for n in NOT_JSON_NUMBERS),
        *((f"{tools}/arkme_group_member_candidates/execute", '{"arguments": {"source_ref": "x", "limit": %s}}' % n)
          for n in NOT_JSON_NUMBERS),
        *(("sessions", '{"account": "%s", "profile": %s}' % (account, n)) for n in NOT_JSON_NUMBERS),
        # A key named twice: decoders differ on which value wins.
        ("sessions", '{"account": "%s", "account": "%s"}' % (account, account)),
        (f"sessions/{session}/messages", '{"id": "m1", "text": "确认", "text": "no"}'),
        (f"{tools}/arkme_context/execute", '{"arguments": {}, "arguments": {}}'),
        (f"{tools}/arkme_id_change/pre-execute", '{"arguments": {"arkme_id": "abcdef", "arkme_id": "ghijkl"}}'),
        (f"{tools}/arkme_id_change/execute",
         '{"arguments": {"arkme_id": "abcdef"}, "approval": "x", "approval": "y"}'),
    ]


def test_every_malformed_json_body_is_a_400_that_writes_nothing(dsh, session, world, figures):
    cases = body_cases(session, world.alice.public_id)
    for path, body in cases:
        response = dsh.api.post(dsh.url(path), body, content_type="application/json")
        assert_error(response, 400, {"malformed_request", "invalid_request", "invalid_arguments"})
        figures.add("hostile_requests_refused")
    assert Message.objects.count() == 0 and ApprovalGrant.objects.count() == 0 and ToolCall.objects.count() == 0


def test_a_key_named_twice_is_refused_without_echoing_the_key(dsh, session):
    body = '{"arguments": {"arkme_id": "abcdef", "arkme_id": "ghijkl"}}'
    response = dsh.api.post(dsh.url(f"sessions/{session}/tools/arkme_id_change/pre-execute"), body,
                            content_type="application/json")
    assert_error(response, 400, "malformed_request")
    assert "arkme_id" not in response.content.decode()
    assert not ApprovalGrant.objects.exists()


def test_a_surrogate_in_the_idempotency_key_or_the_path_is_refused(dsh, session):
    response = dsh.api.post(dsh.url(f"sessions/{session}/tools/arkme_context/execute"), {"arguments": {}},
                            format="json", HTTP_IDEMPOTENCY_KEY="\udcff")
    assert_error(response, 400, "invalid_idempotency_key")
    assert_error(dsh.api.get(dsh.url("sessions/%ED%A0%80")), 404, "unknown_session")
    for path in ("sessions/%ED%A0%80/tools/arkme_context/execute", f"sessions/{session}/tools/%ED%A0%80/execute"):
        response = dsh.api.post(dsh.url(path), {"arguments": {}}, format="json")
        assert_error(response, 404, {"unknown_session", "unknown_tool"})


def multipart(boundary: str, closed: bool) -> bytes:
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\nm1\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"attachments\"; filename=\"a.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n" + "x" * 5000)
    if closed:
        body += f"\r\n--{boundary}--\r\n"
    return body.encode()


@pytest.mark.parametrize("closed", [False, True])
def test_a_multipart_body_cut_off_before_its_closing_boundary_is_refused(dsh, session, closed):
    response = dsh.api.generic("POST", dsh.url(f"sessions/{session}/messages"), multipart("B0UND", closed),
                               content_type="multipart/form-data; boundary=B0UND")
    if closed:
        assert response.status_code == 201 and response.json()["attachments"] == 1
        assert CapturedAttachment.objects.count() == 1
    else:
        assert_error(response, 400, "malformed_request")
        assert Message.objects.count() == 0 and CapturedAttachment.objects.count() == 0


BODIES = [
    {"arguments": {}}, {"arguments": {}, "approval": None}, {"arguments": {}, "approval": ""},
    {"arguments": {}, "approval": "  "}, {"arguments": None}, {"arguments": []}, {"arguments": 3},
    {"arguments": {}, "extra": 1}, {"approval": None}, {}, [], "text", {"arguments": {"x": 1}},
    {"arguments": {}, "approval": 5}, {"arguments": {}, "approval": "a" * 101},
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
@pytest.mark.parametrize("step", ["pre-execute", "execute"])
def test_a_call_body_is_answered_as_the_serializer_answers_it(dsh, session, body, step, monkeypatch):
    """Well-formed bodies skip the serializer; every body gets the answer it gave."""
    from toolregistry.api import views

    path = f"sessions/{session}/tools/arkme_context/{step}"
    fast = dsh.post(path, body)
    monkeypatch.setattr(views, "_call_request", views._validated)
    slow = dsh.post(path, body)
    assert fast.status_code == slow.status_code
    if fast.status_code >= 400:
        assert fast.json() == slow.json()


def test_the_json_rules_hold_however_a_body_is_written():
    """The walk for depth and lone surrogates runs only where the raw body could break a rule;
    every body on either side of each rule is still answered as the rule says."""
    from rest_framework.exceptions import ParseError

    from toolregistry.api.parsers import MAX_DEPTH, loads_strict

    nested = lambda n: b"[" * n + b"]" * n  # noqa: E731
    accepted = [
        nested(MAX_DEPTH + 1),  # the innermost list is at depth MAX_DEPTH
        b"[" + b",".join([b"[]"] * (MAX_DEPTH * 2)) + b"]",  # many brackets, shallow
        b'{"a": "\\uD83D\\uDE00"}',  # a surrogate pair is one character
        b'{"a": "\\\\ud800"}',  # an escaped backslash, then text
        '{"a": "确认 😀"}'.encode(),
    ]
    refused = [
        nested(MAX_DEPTH + 2),
        b'{"a": "\\ud800"}',
        b'{"a": ["x", "\\uDFFF"]}',
        b'{"\\udc00": 1}',
        b'{"a": "\\uDE00\\uD83D"}',  # a pair in the wrong order is two lone surrogates
        b"[" * 40 + b'"\\ud800"' + b"]" * 40,
    ]
    assert [loads_strict(body) is not None for body in accepted] == [True] * len(accepted)
    for body in refused:
        with pytest.raises(ParseError):
            loads_strict(body)


@pytest.mark.parametrize("value", [5, 5.0, True, [], {}], ids=["int", "float", "bool", "list", "object"])
def test_a_field_the_contract_types_as_a_string_takes_only_a_string(dsh, session, world, value):
    """DRF's CharField reads a number as its text: ``"id": 5`` and ``"id": "5"`` would be one
    message. Each such field is a 400 naming it, and nothing is written."""
    account = world.alice.public_id
    cases = [
        ("sessions", {"account": value}, "account"),
        ("sessions", {"account": account, "profile": value}, "profile"),
        ("sessions", {"account": account, "workspace": value}, "workspace"),
        (f"sessions/{session}/messages", {"id": value, "text": "x"}, "id"),
        (f"sessions/{session}/messages", {"id": "m1", "text": value}, "text"),
        (f"sessions/{session}/tools/arkme_id_change/execute", {"arguments": {"arkme_id": "abcdef"}, "approval": value},
         "approval"),
    ]
    sessions_before = AgentSession.objects.count()
    for path, body, field in cases:
        response = dsh.post(path, body)
        assert_error(response, 400, "invalid_request", message=f"Invalid request: {field}.",
                     details={"fields": [field]})
    assert AgentSession.objects.count() == sessions_before
    assert not Message.objects.exists() and not ApprovalGrant.objects.exists() and not ToolCall.objects.exists()


def test_what_django_refuses_before_a_view_is_still_the_envelope(dsh, session, settings):
    """A Host header the service does not serve is refused by Django before any view runs;
    under the DSH API it is the envelope (a JSON-RPC error on an MCP endpoint), elsewhere
    Django's page."""
    settings.ALLOWED_HOSTS = ["testserver"]
    response = dsh.api.get(dsh.url("catalog"), HTTP_HOST="evil.example")
    error = assert_error(response, 400, "invalid_request",
                         message="The Host header names a host this service does not serve.")
    assert "details" not in error
    response = dsh.api.generic("POST", dsh.url(f"sessions/{session}/mcp"), b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
                               content_type="application/json", HTTP_HOST="evil.example",
                               headers={"MCP-Protocol-Version": "2025-11-25"})
    assert_rpc_error(response, 400, -32600)
    response = dsh.api.get("/admin/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


def test_a_body_django_finds_too_large_is_413_in_the_envelope(settings):
    from django.core.exceptions import RequestDataTooBig
    from django.test import RequestFactory

    from toolregistry.api.exceptions import bad_request

    response = bad_request(RequestFactory().post("/dsh/v1/sessions/s/messages"), RequestDataTooBig())
    assert_error(response, 413, "payload_too_large")
