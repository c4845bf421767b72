"""One assertion for every refusal the suite sees: the contract's error envelope and its headers.

``assert_error`` reads an HTTP answer (the Django and DRF test clients, requests, httpx, or
an ``Answer`` built from a raw socket's status, headers and body); ``assert_tool_error`` an
MCP ``tools/call`` result, as a dict or as an SDK's ``CallToolResult``; ``assert_denied`` a
pre-execute ``deny`` decision. Each checks the envelope's rules (DSH_API.md, "Errors") and
returns the ``error`` object so a test can look further. ``assert_rpc_error`` is the MCP
endpoint's refusal below a tool: a JSON-RPC error, whose ``data`` may carry the envelope.
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from arkme.kernel.errors import ErrorCode

ERROR_KEYS = {"code", "message", "details"}
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
# Only the registry's words leave the service (the schema serves it as the enum of error.code).
REGISTERED = frozenset(member.value for member in ErrorCode)
# For a test whose refusals differ by case and which checks the envelope, not the word.
ANY_CODE = REGISTERED


@dataclass
class Answer:
    """An HTTP answer read off a socket (the live tests' servers), shaped like a test response."""

    status_code: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None

    @property
    def content(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode()


def _shown(body: Any) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False)
    return text if len(text) <= 2000 else text[:2000] + "…"


def _header(headers: Any, name: str) -> str | None:
    """A header by name, whatever the casing (Django's, requests', httpx's and plain dicts)."""
    if hasattr(headers, "get") and headers.get(name) is not None:
        return str(headers.get(name))
    for key, value in dict(headers).items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _expected(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, (str, int)):
        return bool(value == wanted)
    return value in wanted


def check_error(error: Any, code: str | Collection[str], *, message: str | None = None,
                details: dict[str, Any] | None = None, shown: str = "") -> dict[str, Any]:
    """The inside of an envelope: ``{"code", "message", "details"?}`` by the contract's rules,
    then the expected code, and the message and details when given."""
    where = f"\nbody: {shown or _shown(error)}"
    assert isinstance(error, dict), f"the error is not an object{where}"
    assert set(error) <= ERROR_KEYS, f"keys outside the envelope: {sorted(set(error) - ERROR_KEYS)}{where}"
    assert isinstance(error.get("code"), str) and SNAKE_CASE.match(error["code"]), \
        f"code is not a snake_case word: {error.get('code')!r}{where}"
    assert error["code"] in REGISTERED, f"code {error['code']!r} is not in arkme.kernel.errors.ErrorCode{where}"
    assert isinstance(error.get("message"), str) and error["message"].strip(), f"no message{where}"
    if "details" in error:
        assert isinstance(error["details"], dict) and error["details"], f"details present but not a filled object{where}"
    assert _expected(error["code"], code), f"code {error['code']!r}, expected {code!r}{where}"
    if message is not None:
        assert error["message"] == message, f"message {error['message']!r}, expected {message!r}{where}"
    if details is not None:
        assert error.get("details") == details, f"details {error.get('details')!r}, expected {details!r}{where}"
    return error


def check_envelope(body: Any, code: str | Collection[str], **expected: Any) -> dict[str, Any]:
    """``{"error": {…}}`` and nothing beside it; returns the ``error``."""
    assert isinstance(body, dict) and set(body) == {"error"}, f"not the error envelope\nbody: {_shown(body)}"
    return check_error(body["error"], code, shown=_shown(body), **expected)


def assert_error(response: Any, status: int | Collection[int], code: str | Collection[str], *,
                 message: str | None = None, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """An HTTP refusal: the status, a JSON body that is exactly the error envelope, the code
    (one, or any of a collection), the message and details when given, and the headers the
    status asks for (``WWW-Authenticate`` on 401, ``Retry-After`` on 429 and 503). A 5xx
    carries no traceback. Returns the ``error`` object."""
    raw = response.content
    where = f"\nstatus {response.status_code}, body: {_shown(raw)}"
    assert _expected(response.status_code, status), f"status {response.status_code}, expected {status!r}{where}"
    content_type = _header(response.headers, "Content-Type") or ""
    assert content_type.split(";")[0].strip() == "application/json", f"Content-Type {content_type!r}{where}"
    try:
        body = json.loads(raw)
    except ValueError:
        raise AssertionError(f"the body is not JSON{where}") from None
    error = check_envelope(body, code, message=message, details=details)
    if response.status_code == 401:
        challenge = _header(response.headers, "WWW-Authenticate") or ""
        assert challenge.startswith("Bearer"), f"a 401 without WWW-Authenticate: Bearer ({challenge!r}){where}"
    if response.status_code in (429, 503):
        retry_after = _header(response.headers, "Retry-After") or ""
        assert retry_after.isdigit() and int(retry_after) >= 1, \
            f"a {response.status_code} without a Retry-After in seconds ({retry_after!r}){where}"
        if response.status_code == 429:
            assert (error.get("details") or {}).get("retry_after_seconds") == int(retry_after), \
                f"Retry-After {retry_after} is not details.retry_after_seconds{where}"
    if response.status_code >= 500:
        assert b"Traceback" not in raw, f"a traceback in a {response.status_code}{where}"
    return error


def _tool_fields(result: Any) -> tuple[Any, Any, Any]:
    """``isError``, ``structuredContent`` and ``content`` of a result dict or an SDK object."""
    if isinstance(result, dict):
        return result.get("isError"), result.get("structuredContent"), result.get("content")
    content = [item.model_dump() if hasattr(item, "model_dump") else item for item in (result.content or [])]
    return result.is_error, result.structured_content, content


def assert_tool_error(result: Any, code: str | Collection[str], *, message: str | None = None,
                      details: dict[str, Any] | None = None) -> dict[str, Any]:
    """An MCP ``tools/call`` refusal: ``isError: true`` with the REST envelope as its
    ``structuredContent`` and, when the result carries ``content``, the same JSON as its text.
    Returns the ``error`` object."""
    is_error, structured, content = _tool_fields(result)
    where = f"\nresult: {_shown(result if isinstance(result, dict) else structured)}"
    assert is_error is True, f"not a tool error{where}"
    if content:
        assert content[0].get("type") == "text" and json.loads(content[0]["text"]) == structured, \
            f"the text content is not the structured content{where}"
    return check_envelope(structured, code, message=message, details=details)


def assert_rpc_error(response: Any, status: int | Collection[int], code: int | Collection[int], *,
                     message: str | None = None) -> dict[str, Any]:
    """A refusal of the MCP endpoint below the tool (a malformed message, a missing header, an
    unknown tool, an unknown session): a JSON-RPC error object, as JSON, with the status.
    Returns the ``error`` object (its ``data`` may carry the REST envelope; see ``check_envelope``)."""
    raw = response.content
    where = f"\nstatus {response.status_code}, body: {_shown(raw)}"
    assert _expected(response.status_code, status), f"status {response.status_code}, expected {status!r}{where}"
    content_type = _header(response.headers, "Content-Type") or ""
    assert content_type.split(";")[0].strip() == "application/json", f"Content-Type {content_type!r}{where}"
    body = json.loads(raw)
    assert isinstance(body, dict) and body.get("jsonrpc") == "2.0" and "result" not in body, \
        f"not a JSON-RPC error{where}"
    error = body.get("error")
    assert isinstance(error, dict) and set(error) <= {"code", "message", "data"}, f"not a JSON-RPC error object{where}"
    assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), f"no code or message{where}"
    assert _expected(error["code"], code), f"code {error['code']!r}, expected {code!r}{where}"
    if message is not None:
        assert error["message"] == message, f"message {error['message']!r}, expected {message!r}{where}"
    return error


def assert_denied(response: Any, code: str | Collection[str], *, message: str | None = None,
                  details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pre-execute that answers ``deny``: a 200 whose ``error`` is the envelope's inside.
    Returns the ``error`` object."""
    raw = response.content
    where = f"\nstatus {response.status_code}, body: {_shown(raw)}"
    assert response.status_code == 200, f"status {response.status_code}, expected 200{where}"
    body = json.loads(raw)
    assert isinstance(body, dict) and set(body) == {"decision", "error"} and body["decision"] == "deny", \
        f"not a deny decision{where}"
    return check_error(body["error"], code, message=message, details=details, shown=_shown(raw))
