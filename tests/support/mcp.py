"""An MCP client over the Django test client: the JSON-RPC a host's SDK sends, both eras.

Responses go through the DSH recording client, so the leak guard sees them too. The official
SDK clients are exercised against a live server in their own tests; this one keeps the
protocol-level cases (headers, replays, the bad-input catalogue) fast and exact.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Callable

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
_ids = itertools.count(1)


@dataclass
class Mcp:
    dsh: Any
    session: str
    version: str = MODERN
    elicitation: bool = True
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
            capabilities = {"elicitation": {"form": {}}} if self.elicitation else {}
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


def error_of(result: dict) -> dict:
    """The REST envelope's ``error`` carried by a tool error result."""
    assert result["isError"] is True, result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]["error"]


def value_of(result: dict) -> dict:
    """A success's ``structuredContent``, checked against its text twin."""
    assert result["isError"] is False, result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]
