"""An MCP client over the Django test client: the JSON-RPC a host's SDK sends, both eras.

Responses go through the DSH recording client, so the leak guard sees them too. The official
SDK clients are exercised against a live server in their own tests; this one keeps the
protocol-level cases (headers, replays, the bad-input catalogue) fast and exact.
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Callable

from tests.support.errors import ANY_CODE, assert_denied, assert_error, assert_tool_error

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
_ids = itertools.count(1)


@dataclass
class Mcp:
    dsh: Any
    session: str
    version: str = MODERN
    elicitation: bool = True
    urls: bool = False  # declares URL-mode elicitation too
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"/dsh/v1/sessions/{self.session}/mcp"

    def post(self, body: Any, **headers: str):
        return self.dsh.api.generic("POST", self.path, json.dumps(body), content_type="application/json",
                                    headers={**self.headers, **headers})

    def rpc(self, method: str, params: dict | None = None, **headers: str):
        params = dict(params or {})
        extra = dict(headers)
        if self.version == MODERN:
            capabilities = {"elicitation": {"form": {}, **({"url": {}} if self.urls else {})}} if self.elicitation else {}
            params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": capabilities,
                               **params.get("_meta", {})}
            extra = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **extra}
            if method == "tools/call":
                extra.setdefault("Mcp-Name", params["name"])
        else:
            extra = {"MCP-Protocol-Version": self.version, **extra}
        return self.post({"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}, **extra)

    def result(self, method: str, params: dict | None = None, **headers: str) -> dict:
        response = self.rpc(method, params, **headers)
        assert response.status_code == 200, response.content
        body = response.json()
        assert "result" in body, body
        return body["result"]

    def tools(self) -> list[dict]:
        return self.result("tools/list")["tools"]

    def call(self, name: str, arguments: dict | None = None, *, meta: dict | None = None,
             request_state: str | None = None, input_responses: dict | None = None, **headers: str) -> dict:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        if request_state is not None:
            params["requestState"] = request_state
        if input_responses is not None:
            params["inputResponses"] = input_responses
        return self.result("tools/call", params, **headers)

    def call_answering(self, name: str, arguments: dict, answer: Callable[[dict], dict], **headers: str) -> dict:
        """Call, answering each form elicitation with ``answer(params)``, as an SDK's callback does."""
        result = self.call(name, arguments, **headers)
        for _ in range(4):
            if result.get("resultType") != "input_required":
                return result
            responses = {key: answer(request["params"]) for key, request in result["inputRequests"].items()}
            result = self.call(name, arguments, request_state=result["requestState"],
                               input_responses=responses, **headers)
        raise AssertionError("too many rounds")


def accept(**content: Any) -> Callable[[dict], dict]:
    return lambda params: {"action": "accept", "content": content}


def value_of(result: dict) -> dict:
    """A success's ``structuredContent``, checked against its text twin."""
    assert result["isError"] is False, result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]


@dataclass
class Outcome:
    """One call's end, whichever door it came through: refused with the REST error, or a result."""

    refused: bool
    error: dict | None
    result: dict | None


def rest_outcome(response) -> Outcome:
    if response.status_code >= 400:
        return Outcome(True, assert_error(response, range(400, 600), ANY_CODE), None)
    body = response.json()
    if body.get("decision") == "deny":
        return Outcome(True, assert_denied(response, ANY_CODE), None)
    return Outcome(False, None, body.get("result"))


def mcp_outcome(result: dict) -> Outcome:
    if result.get("isError"):
        return Outcome(True, assert_tool_error(result, ANY_CODE), None)
    return Outcome(False, None, value_of(result))


def both_ways(dsh, session: str, tool: str, arguments: dict, *,
              human: Callable[[dict], dict] = accept(approve=True, reply="确认")) -> dict[str, Outcome]:
    """The same call through REST (pre-execute, then execute with the approval when asked) and
    through MCP (the 2026-07-28 client whose human approves and confirms)."""
    rest = dsh.pre_execute(session, tool, arguments)
    decision = rest.json().get("decision") if rest.status_code == 200 else None
    if decision == "ask":
        rest = dsh.execute(session, tool, arguments, approval=rest.json()["approval"])
    elif decision == "allow":
        rest = dsh.execute(session, tool, arguments)
    over_mcp = Mcp(dsh, session).call_answering(tool, arguments, human)
    return {"rest": rest_outcome(rest), "mcp": mcp_outcome(over_mcp)}


def refused_alike(outcomes: dict[str, Outcome], code: str | Collection[str] = ANY_CODE) -> dict:
    """Both doors refused, with the same error (of ``code`` when given); returns it."""
    rest, over_mcp = outcomes["rest"], outcomes["mcp"]
    assert rest.refused and over_mcp.refused, outcomes
    assert rest.error == over_mcp.error, outcomes
    assert rest.error is not None
    assert rest.error["code"] == code if isinstance(code, str) else rest.error["code"] in code, outcomes
    return rest.error


class SseCall:
    """A 2025-era ``tools/call`` over real HTTP whose answer is read as an SSE stream, one event
    at a time, as an SDK reads it; ``answer`` POSTs the client's JSON-RPC response to a
    question, as the SDK does after its callback."""

    def __init__(self, url: str, key: str, name: str, arguments: dict, *, version: str = LEGACY) -> None:
        import httpx

        self.url, self.version = url, version
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
        self._client = httpx.Client(timeout=60)
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}
        self._response = self._client.send(self._client.build_request("POST", url, json=body, headers=self.headers),
                                           stream=True)
        self._lines = self._response.iter_lines()

    @property
    def content_type(self) -> str:
        return self._response.headers.get("Content-Type", "")

    def body(self) -> dict:
        """The whole answer as one JSON document (a call that asked nothing)."""
        return json.loads(self._response.read())

    def event(self) -> dict | None:
        """The next event's message (comment lines skipped), None when the stream ended."""
        data: list[str] = []
        for line in self._lines:
            if line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                return json.loads("\n".join(data))
        return None

    def answer(self, url: str, question: dict, result: dict):
        """POST the answer to ``question`` (to ``url``: this endpoint, maybe on another node)."""
        import httpx

        return httpx.post(url, json={"jsonrpc": "2.0", "id": question["id"], "result": result},
                          headers=self.headers, timeout=30)

    def close(self) -> None:
        self._response.close()
        self._client.close()
