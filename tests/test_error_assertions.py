"""The shared refusal assertions themselves: each fails on what the contract forbids, and reads
every kind of response the suite holds."""
from __future__ import annotations

import json

import httpx
import mcp_types
import pytest
import requests
from django.http import HttpResponse, JsonResponse

from tests.support.errors import (
    ANY_CODE,
    Answer,
    assert_denied,
    assert_error,
    assert_rpc_error,
    assert_tool_error,
)

ERROR = {"code": "unknown_tool", "message": "No such tool in this session."}


def envelope(status: int = 404, error: dict | None = None, **headers: str) -> JsonResponse:
    return JsonResponse({"error": error or ERROR}, status=status, headers=headers)


def test_a_refusal_in_the_envelope_passes_and_returns_its_error():
    assert assert_error(envelope(), 404, "unknown_tool") == ERROR
    assert assert_error(envelope(), (400, 404), {"unknown_tool", "not_found"}) == ERROR
    assert assert_error(envelope(), 404, ANY_CODE, message=ERROR["message"]) == ERROR


def test_a_wrong_code_fails_and_shows_the_body():
    with pytest.raises(AssertionError, match=r"code 'unknown_tool', expected 'not_found'[\s\S]*No such tool"):
        assert_error(envelope(), 404, "not_found")


def test_a_wrong_status_fails():
    with pytest.raises(AssertionError, match="status 404, expected 400"):
        assert_error(envelope(), 400, "unknown_tool")


def test_a_wrong_message_or_details_fails():
    with pytest.raises(AssertionError, match="message"):
        assert_error(envelope(), 404, "unknown_tool", message="Not found.")
    with pytest.raises(AssertionError, match="details"):
        assert_error(envelope(), 404, "unknown_tool", details={"fields": ["name"]})


@pytest.mark.parametrize("body", [
    {"detail": "Not found."},                                         # DRF's own shape
    {"error": "unknown_tool"},                                        # not an object
    {"error": ERROR, "result": {}},                                   # something beside it
    {"error": {"code": "unknown_tool"}},                              # no message
    {"error": {**ERROR, "message": ""}},
    {"error": {**ERROR, "trace": "…"}},                               # a key outside the envelope
    {"error": {**ERROR, "details": []}},
    {"error": {**ERROR, "details": {}}},                              # present but empty
    {"error": {**ERROR, "code": "UnknownTool"}},                      # not snake_case
    {"error": {**ERROR, "code": "made_up_code"}},                     # not in the registry
    {"error": {**ERROR, "code": 404}},
])
def test_a_body_outside_the_envelope_fails(body):
    with pytest.raises(AssertionError):
        assert_error(JsonResponse(body, status=404), 404, ANY_CODE)


def test_a_body_that_is_not_json_fails():
    page = HttpResponse(b"<h1>Not Found</h1>", status=404, content_type="text/html")
    with pytest.raises(AssertionError, match="Content-Type 'text/html"):
        assert_error(page, 404, "not_found")
    mislabelled = HttpResponse(b"<h1>Not Found</h1>", status=404, content_type="application/json")
    with pytest.raises(AssertionError, match="not JSON"):
        assert_error(mislabelled, 404, "not_found")


def test_a_401_needs_its_bearer_challenge():
    unauthenticated = {"code": "not_authenticated", "message": "A valid client key is required."}
    with pytest.raises(AssertionError, match="WWW-Authenticate"):
        assert_error(envelope(401, unauthenticated), 401, "not_authenticated")
    with pytest.raises(AssertionError, match="WWW-Authenticate"):
        assert_error(envelope(401, unauthenticated, **{"WWW-Authenticate": "Basic"}), 401, "not_authenticated")
    assert_error(envelope(401, unauthenticated, **{"WWW-Authenticate": 'Bearer realm="dsh"'}), 401, "not_authenticated")


def test_a_429_needs_a_retry_after_that_its_details_repeat():
    throttled = {"code": "throttled", "message": "Too many requests.", "details": {"retry_after_seconds": 7}}
    with pytest.raises(AssertionError, match="Retry-After"):
        assert_error(envelope(429, throttled), 429, "throttled")
    with pytest.raises(AssertionError, match="retry_after_seconds"):
        assert_error(envelope(429, throttled, **{"Retry-After": "3"}), 429, "throttled")
    assert_error(envelope(429, throttled, **{"Retry-After": "7"}), 429, "throttled")


def test_a_503_needs_a_retry_after():
    unavailable = {"code": "storage_unavailable", "message": "Storage is unavailable; try again."}
    with pytest.raises(AssertionError, match="Retry-After"):
        assert_error(envelope(503, unavailable), 503, "storage_unavailable")
    with pytest.raises(AssertionError, match="Retry-After"):
        assert_error(envelope(503, unavailable, **{"Retry-After": "soon"}), 503, "storage_unavailable")
    assert_error(envelope(503, unavailable, **{"Retry-After": "5"}), 503, "storage_unavailable")


def test_a_5xx_carries_no_traceback():
    leaked = {"code": "internal_error", "message": "Traceback (most recent call last): …"}
    with pytest.raises(AssertionError, match="traceback"):
        assert_error(envelope(500, leaked), 500, "internal_error")


def test_requests_httpx_and_raw_answers_are_read_alike():
    body = json.dumps({"error": ERROR}).encode()
    from_requests = requests.Response()
    from_requests.status_code, from_requests._content = 404, body
    from_requests.headers["content-type"] = "application/json"
    from_httpx = httpx.Response(404, content=body, headers={"content-type": "application/json"})
    raw = Answer(404, {"content-type": "application/json; charset=utf-8"}, {"error": ERROR})
    for response in (from_requests, from_httpx, raw, Answer(404, {"Content-Type": "application/json"}, body)):
        assert assert_error(response, 404, "unknown_tool") == ERROR
    with pytest.raises(AssertionError, match="WWW-Authenticate"):
        assert_error(Answer(401, {"content-type": "application/json"},
                            {"error": {"code": "not_authenticated", "message": "m"}}), 401, "not_authenticated")


def tool_result(structured: dict, *, is_error: bool = True, text: str | None = None) -> dict:
    return {"isError": is_error, "structuredContent": structured,
            "content": [{"type": "text", "text": json.dumps(structured) if text is None else text}]}


def test_a_tool_error_carries_the_envelope_and_its_text_twin():
    assert assert_tool_error(tool_result({"error": ERROR}), "unknown_tool") == ERROR
    assert assert_tool_error({"isError": True, "structuredContent": {"error": ERROR}}, "unknown_tool") == ERROR
    with pytest.raises(AssertionError, match="code 'unknown_tool'"):
        assert_tool_error(tool_result({"error": ERROR}), "approval_required")
    with pytest.raises(AssertionError, match="not a tool error"):
        assert_tool_error(tool_result({"error": ERROR}, is_error=False), "unknown_tool")
    with pytest.raises(AssertionError, match="text content"):
        assert_tool_error(tool_result({"error": ERROR}, text="{}"), "unknown_tool")
    with pytest.raises(AssertionError, match="envelope"):
        assert_tool_error(tool_result(ERROR), "unknown_tool")


def test_an_sdk_tool_result_is_read_as_the_dict_is():
    declined = {"error": {"code": "approval_declined", "message": "The human declined this call."}}
    result = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=json.dumps(declined))],
                                      structured_content=declined, is_error=True)
    assert assert_tool_error(result, "approval_declined") == declined["error"]
    with pytest.raises(AssertionError):
        assert_tool_error(result, "approval_required")


def test_a_deny_decision_is_a_200_with_the_envelopes_error():
    denied = JsonResponse({"decision": "deny", "error": ERROR})
    assert assert_denied(denied, "unknown_tool") == ERROR
    with pytest.raises(AssertionError, match="not a deny"):
        assert_denied(JsonResponse({"decision": "ask", "approval": "apv_x", "error": ERROR}), "unknown_tool")
    with pytest.raises(AssertionError, match="status 404"):
        assert_denied(envelope(), "unknown_tool")


def test_a_json_rpc_error_is_told_from_the_envelope():
    rpc = JsonResponse({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown tool"}})
    assert assert_rpc_error(rpc, 200, -32602)["message"] == "Unknown tool"
    with pytest.raises(AssertionError, match="code -32602, expected -32600"):
        assert_rpc_error(rpc, 200, -32600)
    with pytest.raises(AssertionError, match="not a JSON-RPC error"):
        assert_rpc_error(envelope(), 404, -32600)
