"""A DSH client for tests: the REST calls DSH makes, every response recorded for the leak guard."""
from __future__ import annotations

import json
from dataclasses import dataclass

from rest_framework.test import APIClient

from arkme.accounts.models import Account
from arkme.conversations.clients import dsh_client_create


class LeakLedger:
    """Every DSH response a test sees, and the values that test declared secret."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, object]] = []
        self.secrets: set[str] = set()
        self.account_ids: set[str] = set()
        self.scanned = 0
        self.found = 0

    def record(self, path: str, response, request_body=None) -> None:
        if response.get("Content-Type", "").startswith("application/json") and response.content:
            self.bodies.append((path, response.json()))
            # Raw account ids, to look for inside decoded refs.
            self.account_ids.update(str(pk) for pk in Account.objects.values_list("pk", flat=True))


LEDGER = LeakLedger()


class RecordingClient(APIClient):
    def generic(self, method, path, data="", *args, **kwargs):
        response = super().generic(method, path, data, *args, **kwargs)
        if path.startswith("/dsh/"):
            LEDGER.record(mcp_label(path, data), response)
        return response


def mcp_label(path: str, data) -> str:
    """An MCP response's path names the tool its ``tools/call`` ran, for the result-schema check."""
    if not path.endswith("/mcp"):
        return path
    try:
        message = json.loads(data)
    except (TypeError, ValueError, RecursionError):
        return path
    if isinstance(message, dict) and message.get("method") == "tools/call":
        name = (message.get("params") or {}).get("name")
        if isinstance(name, str):
            return f"{path}#{name}"
    return path


@dataclass
class Dsh:
    api: APIClient
    key: str
    client: object

    def url(self, path: str) -> str:
        return f"/dsh/v1/{path}"

    def get(self, path, **kw):
        return self.api.get(self.url(path), **kw)

    def post(self, path, data=None, **kw):
        kw.setdefault("format", "json")
        return self.api.post(self.url(path), data, **kw)

    def put(self, path, **kw):
        return self.api.put(self.url(path), **kw)

    def delete(self, path, **kw):
        return self.api.delete(self.url(path), **kw)

    def open_session(self, account: Account, **body) -> dict:
        response = self.post("sessions", {"account": account.public_id, **body})
        assert response.status_code == 201, response.content
        return response.json()

    def execute(self, session: str, tool: str, arguments: dict, **kw):
        body = {"arguments": arguments}
        if "approval" in kw:
            body["approval"] = kw.pop("approval")
        return self.post(f"sessions/{session}/tools/{tool}/execute", body, **kw)

    def pre_execute(self, session: str, tool: str, arguments: dict):
        return self.post(f"sessions/{session}/tools/{tool}/pre-execute", {"arguments": arguments})

    def approve_and_execute(self, session: str, tool: str, arguments: dict, **kw):
        decision = self.pre_execute(session, tool, arguments).json()
        assert decision["decision"] == "ask", decision
        return self.execute(session, tool, arguments, approval=decision["approval"], **kw)


def make_dsh(name: str = "dsh", profiles=()) -> Dsh:
    client, key = dsh_client_create(name=name, profiles=profiles)
    api = RecordingClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return Dsh(api=api, key=key, client=client)
