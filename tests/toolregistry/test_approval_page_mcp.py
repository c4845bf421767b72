"""Approvals taken on Arkme's page, over MCP: a 2026-07-28 client that declares URL-mode
elicitation is sent to the page (the retry runs only once the account approved there, and a
retry before it is asked the same again); a client that cannot open a URL gets
``approval_page_required`` with the address, and the same call runs once approved; a 2025-11-25
client is sent there on its call's SSE stream and the call ends once the page answered."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from arkme.kernel.ids import token_digest
from tests.support.errors import assert_tool_error
from tests.support.mcp import LEGACY, Mcp, SseCall, value_of
from tests.support.pages import browser_of, page_path
from toolregistry.models import ApprovalDecision, ApprovalGrant, ApprovalVia, ToolCall

from . import test_mcp_sdk

ID_CHANGE = "arkme_id_change"
PAGE_URL = re.compile(r"^https?://[A-Za-z0-9.\[\]:-]+/approvals/[A-Za-z0-9_-]{43}$")


host = test_mcp_sdk.host  # the SDK tests' fixture: a DSH client, alice's session and the MCP URL


@pytest.fixture
def on_page(settings):
    settings.ARKME_APPROVAL_PAGE_TOOLS = (ID_CHANGE,)


def url_question(result: dict) -> tuple[str, str]:
    """The one URL-mode question of an input-required result: its key and address."""
    assert result.get("resultType") == "input_required", result
    [(key, asked)] = result["inputRequests"].items()
    assert asked["method"] == "elicitation/create"
    params = asked["params"]
    assert params["mode"] == "url" and "requestedSchema" not in params and "elicitationId" not in params, params
    assert PAGE_URL.match(params["url"]) and "alice_paged" in params["message"]
    return key, params["url"]


def approval_of(url: str) -> ApprovalGrant:
    return ApprovalGrant.objects.get(page_handle_hash=token_digest(page_path(url).rsplit("/", 1)[-1]))


@pytest.mark.django_db
def test_a_client_that_opens_urls_is_sent_to_the_page_and_the_call_runs_once_approved(dsh, session, world, on_page):
    mcp = Mcp(dsh, session, urls=True)
    arguments = {"arkme_id": "alice_paged"}
    first = mcp.call(ID_CHANGE, arguments)
    key, url = url_question(first)
    accepted = {key: {"action": "accept"}}
    # Back from the page before answering there: the same question again, nothing run.
    again = mcp.call(ID_CHANGE, arguments, request_state=first["requestState"], input_responses=accepted)
    assert url_question(again) == (key, url)
    assert browser_of(world.bob).post(page_path(url), {"decision": "approve"}).status_code == 403
    assert url_question(mcp.call(ID_CHANGE, arguments, request_state=again["requestState"],
                                 input_responses=accepted)) == (key, url)
    world.alice.refresh_from_db()
    assert world.alice.arkme_id != "alice_paged"
    assert browser_of(world.alice).post(page_path(url), {"decision": "approve"}).status_code == 200
    done = mcp.call(ID_CHANGE, arguments, request_state=again["requestState"], input_responses=accepted)
    assert value_of(done)["account"]["arkme_id"] == "alice_paged"
    approval = approval_of(url)
    assert approval.used_at is not None
    call = ToolCall.objects.get(tool_name=ID_CHANGE, outcome="ok")
    assert call.approval_id == approval.pk and call.surface == "mcp"
    assert sorted(approval.decisions.values_list("decision", "via")) == sorted([
        (ApprovalDecision.Kind.ASKED, ApprovalVia.MCP_URL), (ApprovalDecision.Kind.APPROVED, ApprovalVia.PAGE),
        (ApprovalDecision.Kind.USED, ApprovalVia.PAGE)])
    # The same answer again: the approval was used up.
    replayed = mcp.call(ID_CHANGE, arguments, request_state=again["requestState"], input_responses=accepted)
    assert_tool_error(replayed, "approval_required", details={"reason": "used"})
    assert ApprovalGrant.objects.count() == 1  # one page approval for the call, never a second


@pytest.mark.django_db
def test_a_human_who_will_not_open_the_page_declines_the_approval(dsh, session, world, on_page):
    mcp = Mcp(dsh, session, urls=True)
    arguments = {"arkme_id": "alice_paged"}
    first = mcp.call(ID_CHANGE, arguments)
    key, url = url_question(first)
    declined = mcp.call(ID_CHANGE, arguments, request_state=first["requestState"],
                        input_responses={key: {"action": "decline"}})
    assert_tool_error(declined, "approval_declined")
    approval = approval_of(url)
    assert approval.declined_at is not None and approval.used_at is None
    # The page cannot turn it into a yes afterwards.
    page = browser_of(world.alice).post(page_path(url), {"decision": "approve"})
    assert b'data-status="declined"' in page.content
    world.alice.refresh_from_db()
    assert world.alice.arkme_id != "alice_paged"
    assert ApprovalDecision.objects.filter(decision="declined", via=ApprovalVia.MCP_URL).count() == 1


@pytest.mark.django_db
def test_an_answer_to_a_question_whose_approval_is_gone_is_refused(dsh, session, world, on_page):
    mcp = Mcp(dsh, session, urls=True)
    arguments = {"arkme_id": "alice_paged"}
    first = mcp.call(ID_CHANGE, arguments)
    key, url = url_question(first)
    approval_of(url).delete()
    refused = mcp.call(ID_CHANGE, arguments, request_state=first["requestState"],
                       input_responses={key: {"action": "accept"}})
    assert_tool_error(refused, "approval_required", details={"reason": "invalid"})
    assert not ApprovalGrant.objects.exists()  # nothing asked anew on the strength of that answer


@pytest.mark.django_db
def test_a_decline_on_the_page_is_approval_declined(dsh, session, world, on_page):
    mcp = Mcp(dsh, session, urls=True)
    arguments = {"arkme_id": "alice_paged"}
    first = mcp.call(ID_CHANGE, arguments)
    key, url = url_question(first)
    browser_of(world.alice).post(page_path(url), {"decision": "decline"})
    refused = mcp.call(ID_CHANGE, arguments, request_state=first["requestState"],
                       input_responses={key: {"action": "accept"}})
    assert_tool_error(refused, "approval_declined")
    assert ToolCall.objects.filter(tool_name=ID_CHANGE, outcome="approval_declined").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("version", ["2026-07-28", LEGACY, "2025-06-18"])
def test_a_client_that_cannot_open_urls_gets_the_address_and_the_same_call_runs_once_approved(
        dsh, session, world, on_page, version):
    mcp = Mcp(dsh, session, version=version)  # 2026: form mode only; 2025: no stream
    arguments = {"arkme_id": "alice_paged"}
    refused = assert_tool_error(mcp.call(ID_CHANGE, arguments), "approval_page_required")
    url = refused["details"]["url"]
    assert PAGE_URL.match(url) and refused["details"]["reason"] == "page_required"
    assert ToolCall.objects.filter(tool_name=ID_CHANGE, outcome="approval_page_required").count() == 1
    page = browser_of(world.alice).get(page_path(url))
    assert page.status_code == 200 and b"alice_paged" in page.content
    browser_of(world.alice).post(page_path(url), {"decision": "approve"})
    assert value_of(mcp.call(ID_CHANGE, arguments))["account"]["arkme_id"] == "alice_paged"
    assert approval_of(url).used_at is not None
    # Used once: the next call (other arguments) is sent to a new page.
    other = assert_tool_error(mcp.call(ID_CHANGE, {"arkme_id": "alice_again"}), "approval_page_required")
    assert other["details"]["url"] != url


@pytest.mark.django_db
def test_an_approval_on_the_page_counts_for_its_own_arguments_only(dsh, session, world, on_page):
    mcp = Mcp(dsh, session, elicitation=False)
    url = assert_tool_error(mcp.call(ID_CHANGE, {"arkme_id": "alice_paged"}),
                            "approval_page_required")["details"]["url"]
    browser_of(world.alice).post(page_path(url), {"decision": "approve"})
    assert_tool_error(mcp.call(ID_CHANGE, {"arkme_id": "alice_other"}), "approval_page_required")
    assert approval_of(url).used_at is None  # still there for the call it was given for


@pytest.mark.django_db
def test_tools_not_on_the_page_keep_the_form(dsh, session, world, settings):
    settings.ARKME_APPROVAL_PAGE_TOOLS = ("arkme_extension_preview_delete",)
    result = Mcp(dsh, session, urls=True).call(ID_CHANGE, {"arkme_id": "alice_form"})
    [asked] = result["inputRequests"].values()
    assert asked["params"]["mode"] == "form" and "approve" in asked["params"]["requestedSchema"]["properties"]


@pytest.fixture
def sse_host(live_server, world, on_page):
    from tests.support.dsh import make_dsh

    dsh = make_dsh("sse-page-host")
    root = Path(django_settings.ARKME_WORKSPACE_ROOT) / "ws"
    root.mkdir(parents=True, exist_ok=True)
    session = dsh.open_session(world.alice, workspace="ws")["session"]
    return dsh, f"{live_server.url}/dsh/v1/sessions/{session}/mcp"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_2025_11_25_client_is_sent_to_the_page_on_its_stream(sse_host, world, postgres, settings):
    settings.ARKME_MCP_HEARTBEAT_SECONDS = 1
    dsh, url = sse_host
    call = SseCall(url, dsh.key, ID_CHANGE, {"arkme_id": "alice_paged"})
    try:
        assert call.content_type.startswith("text/event-stream")
        question = call.event()
        params = question["params"]
        assert question["method"] == "elicitation/create" and params["mode"] == "url", question
        assert PAGE_URL.match(params["url"]) and params["elicitationId"].startswith("arkp_")
        assert page_path(params["url"]).rsplit("/", 1)[-1] not in params["elicitationId"]
        assert call.answer(url, question, {"action": "accept"}).status_code == 202
        assert browser_of(world.alice).post(page_path(params["url"]), {"decision": "approve"}).status_code == 200
        complete = call.event()
        assert complete == {"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                            "params": {"elicitationId": params["elicitationId"]}}
        result = call.event()["result"]
        assert value_of(result)["account"]["arkme_id"] == "alice_paged"
        assert call.event() is None
    finally:
        call.close()
    assert approval_of(params["url"]).used_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_2025_06_18_client_on_a_stream_gets_the_address(sse_host):
    dsh, url = sse_host
    call = SseCall(url, dsh.key, ID_CHANGE, {"arkme_id": "alice_paged"}, version="2025-06-18")
    try:
        assert call.content_type.startswith("application/json")  # nothing to ask on a stream
        refused = assert_tool_error(call.body()["result"], "approval_page_required")
        assert PAGE_URL.match(refused["details"]["url"])
    finally:
        call.close()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("answer_on_page", ["approve", "decline"])
def test_the_official_sdk_opens_the_page_and_the_call_waits_for_its_answer(host, world, postgres, on_page,
                                                                           answer_on_page):
    """The Python SDK as a 2026-07-28 host: its elicitation callback gets the URL question (the
    SDK declares URL mode), the human answers on the page, and the retry runs once approved."""
    import anyio

    from tests.toolregistry.test_mcp_sdk import connect, run

    _, key, _, _, url = host
    seen: list[str] = []

    def on_the_page(address: str) -> None:
        from django.db import connections

        try:
            browser_of(world.alice).post(page_path(address), {"decision": answer_on_page})
        finally:
            connections.close_all()  # this worker thread's own connection

    async def human(context, params):
        import mcp_types as types

        assert params.mode == "url" and PAGE_URL.match(params.url)
        seen.append(params.url)
        if len(seen) == 2:  # back from the page once before answering there
            await anyio.to_thread.run_sync(on_the_page, params.url)
        return types.ElicitResult(action="accept")

    async def main():
        async with connect(url, key, "2026-07-28", human) as client:
            return await client.call_tool(ID_CHANGE, {"arkme_id": "alice_paged"})

    result = run(main)
    assert len(seen) == 2 and seen[0] == seen[1]  # the same page asked again until it answered
    if answer_on_page == "approve":
        assert result.is_error is False, result.structured_content
        assert result.structured_content["account"]["arkme_id"] == "alice_paged"
        assert approval_of(seen[0]).used_at is not None
    else:
        assert_tool_error(result, "approval_declined")
        world.alice.refresh_from_db()
        assert world.alice.arkme_id != "alice_paged"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_wait_for_the_page_outlasts_a_database_that_is_away_for_a_moment(sse_host, world, postgres, settings,
                                                                             monkeypatch):
    from django.db import OperationalError

    from toolregistry.mcp import stream

    settings.ARKME_MCP_HEARTBEAT_SECONDS = 1
    monkeypatch.setattr(stream, "PAGE_POLL_SECONDS", 0.1)
    reads = []
    real = stream.page_decided

    def flaky(session, key):
        reads.append(key)
        if len(reads) <= 3:
            raise OperationalError("the database went away")
        return real(session, key)

    monkeypatch.setattr(stream, "page_decided", flaky)
    dsh, url = sse_host
    call = SseCall(url, dsh.key, ID_CHANGE, {"arkme_id": "alice_paged"})
    try:
        question = call.event()
        assert call.answer(url, question, {"action": "accept"}).status_code == 202
        for _ in range(200):  # the outage is over once the wait has failed to read three times
            if len(reads) > 3:
                break
            time.sleep(0.05)
        assert len(reads) > 3, reads  # the wait went on reading through the outage
        browser_of(world.alice).post(page_path(question["params"]["url"]), {"decision": "approve"})
        assert call.event()["method"] == "notifications/elicitation/complete"
        assert value_of(call.event()["result"])["account"]["arkme_id"] == "alice_paged"
    finally:
        call.close()
