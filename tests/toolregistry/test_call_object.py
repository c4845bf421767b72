"""One call object a call: the tool looked up once, the arguments validated once and digested
at most once, over REST and over MCP, whichever steps the call takes."""
from __future__ import annotations

from collections import Counter

import pytest

from tests.support.errors import assert_error
from tests.support.mcp import MODERN, Mcp, value_of
from toolregistry import calls, toolsets
from toolregistry.models import ToolCall

APPROVE = "arkme_id_change"
KEY = {"Idempotency-Key": "call-object-1"}


@pytest.fixture
def counted(monkeypatch) -> Counter:
    """How often a request looked up a toolset, validated arguments and digested them."""
    seen: Counter = Counter()

    def counting(name, function):
        def wrapper(*args, **kwargs):
            seen[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(calls, "validate_arguments", counting("validations", calls.validate_arguments))
    monkeypatch.setattr(calls, "arguments_digest", counting("digests", calls.arguments_digest))
    monkeypatch.setattr(toolsets.registrar, "toolset", counting("toolsets", toolsets.registrar.toolset))
    return seen


def test_a_rest_call_with_a_key_and_an_approval_builds_it_once(dsh, session, counted):
    decision = dsh.pre_execute(session, APPROVE, {"arkme_id": "alice_once"}).json()
    assert counted == {"toolsets": 1, "validations": 1, "digests": 1}
    counted.clear()
    done = dsh.execute(session, APPROVE, {"arkme_id": "alice_once"}, approval=decision["approval"], headers=KEY)
    assert done.status_code == 200, done.content
    assert counted == {"toolsets": 1, "validations": 1, "digests": 1}


def test_a_rest_read_builds_it_once_and_digests_nothing(dsh, session, counted):
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    assert counted == {"toolsets": 1, "validations": 1}


def test_invalid_arguments_are_validated_once(dsh, session, counted):
    refused = dsh.execute(session, APPROVE, {"arkme_id": 5}, headers=KEY)
    assert_error(refused, 400, "invalid_arguments")
    assert counted == {"toolsets": 1, "validations": 1}


@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
def test_an_mcp_call_builds_it_once_per_round(dsh, session, counted, version):
    mcp = Mcp(dsh, session, version=version)
    assert value_of(mcp.call("arkme_context", **KEY))
    assert counted == {"toolsets": 1, "validations": 1, "digests": 1}


def test_an_approved_mcp_call_builds_it_once_per_round(dsh, session, counted):
    mcp = Mcp(dsh, session)
    first = mcp.call(APPROVE, {"arkme_id": "alice_mcp_once"}, **KEY)
    assert first["resultType"] == "input_required"
    assert counted == {"toolsets": 1, "validations": 1}  # asking digests nothing: the library binds the state
    counted.clear()
    [question] = first["inputRequests"]
    yes = {question: {"action": "accept", "content": {"approve": True}}}
    done = mcp.call(APPROVE, {"arkme_id": "alice_mcp_once"}, request_state=first["requestState"],
                    input_responses=yes, **KEY)
    assert value_of(done)["account"]["arkme_id"] == "alice_mcp_once"
    assert counted == {"toolsets": 1, "validations": 1, "digests": 1}
    assert ToolCall.objects.filter(surface="mcp", tool_name=APPROVE, outcome="ok").count() == 1


def test_a_call_keeps_no_state_on_the_request(dsh, session, monkeypatch):
    """The doors translate; what a call carries travels on the call object, not on the request:
    after a call over each door the request has no attribute of this service's."""
    from django.core.handlers.wsgi import WSGIRequest

    seen: list[WSGIRequest] = []
    original = WSGIRequest.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(self)

    monkeypatch.setattr(WSGIRequest, "__init__", keep)
    assert value_of(Mcp(dsh, session).call("arkme_context"))
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    assert len(seen) == 2
    for request in seen:
        assert not [name for name in vars(request) if name.startswith("arkme")], vars(request).keys()
