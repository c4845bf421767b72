"""Approvals taken on Arkme's own page, over REST: which calls need the page, the ``approval_url``
of ``ask``, the status endpoint, and execute with a pending, declined and approved approval."""
from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from arkme.kernel.ids import token_digest
from galleries.models import GalleryHistory
from tests.support.errors import assert_error, assert_tool_error
from tests.support.mcp import LEGACY, Mcp, value_of
from tests.support.pages import browser_of, handle_of, page_path
from toolregistry.approval_page import page_tool_names, page_tools_problems
from toolregistry.models import ApprovalDecision, ApprovalGrant, ApprovalVia, ToolCall

REORDER = "arkme_extension_preview_reorder"


@pytest.fixture
def on_page(settings):
    settings.ARKME_APPROVAL_PAGE_TOOLS = ("*",)


@pytest.fixture
def reorder(gs, filled):
    items, revision = filled
    return {"extension": gs.extension, "order": list(reversed(items)), "revision": revision}


def status_of(gs, approval):
    response = gs.dsh.get(f"sessions/{gs.session}/approvals/{approval}")
    assert response.status_code == 200, response.content
    return response.json()["status"]


def ask(gs, arguments, tool=REORDER):
    decision = gs.dsh.pre_execute(gs.session, tool, arguments).json()
    assert decision["decision"] == "ask", decision
    return decision


def test_ask_carries_the_page_address_with_only_a_handle(gs, reorder, on_page):
    decision = ask(gs, reorder)
    url = decision["approval_url"]
    assert url.startswith("http://testserver/approvals/")
    handle = handle_of(url)
    assert handle not in (decision["approval"], decision["approval"].removeprefix("apv_"))
    grant = ApprovalGrant.objects.get(token_hash=token_digest(decision["approval"]))
    assert grant.page_handle_hash == token_digest(handle)
    assert handle not in str(grant.card) and all(handle not in str(v) for v in grant.__dict__.values())
    assert grant.card["title"] == decision["card"]["title"] and grant.card["details"]["images"]
    assert "details" not in decision["card"]  # what the page shows stays on the page
    assert status_of(gs, decision["approval"]) == "pending"


def test_the_public_address_is_used_when_set(gs, reorder, on_page, settings):
    settings.ARKME_PUBLIC_URL = "https://arkme.example"
    assert ask(gs, reorder)["approval_url"].startswith("https://arkme.example/approvals/")


def test_only_the_chosen_tools_and_clients_take_the_page(gs, reorder, settings):
    assert "approval_url" not in ask(gs, reorder)
    gs.dsh.client.approval_page_tools = ["arkme_id_change"]
    gs.dsh.client.save()
    assert "approval_url" not in ask(gs, reorder)
    assert "approval_url" in ask(gs, {"arkme_id": "alice_2026"}, tool="arkme_id_change")
    gs.dsh.client.approval_page_tools = []
    gs.dsh.client.save()
    settings.ARKME_APPROVAL_PAGE_TOOLS = (REORDER,)
    assert "approval_url" in ask(gs, reorder)
    assert "approval_url" not in ask(gs, {"arkme_id": "alice_2026"}, tool="arkme_id_change")


def test_execute_waits_for_the_page_then_runs_once(gs, reorder, on_page, alice_browser):
    decision = ask(gs, reorder)
    approval, before = decision["approval"], GalleryHistory.objects.count()
    pending = gs.dsh.execute(gs.session, REORDER, reorder, approval=approval)
    assert_error(pending, 403, "approval_pending")
    assert GalleryHistory.objects.count() == before and status_of(gs, approval) == "pending"

    page = alice_browser.post(page_path(decision["approval_url"]), {"decision": "approve"})
    assert page.status_code == 200 and b'data-status="approved"' in page.content
    assert status_of(gs, approval) == "approved"
    ran = gs.dsh.execute(gs.session, REORDER, reorder, approval=approval)
    assert ran.status_code == 200, ran.content
    assert [i["item"] for i in ran.json()["result"]["gallery"]["items"]] == reorder["order"]
    assert status_of(gs, approval) == "used"
    again = gs.dsh.execute(gs.session, REORDER, {**reorder, "revision": reorder["revision"] + 1}, approval=approval)
    assert_error(again, 403, "approval_required")
    replay = gs.dsh.execute(gs.session, REORDER, reorder, approval=approval)
    assert_error(replay, 403, "approval_required", details={"reason": "used"})
    assert GalleryHistory.objects.count() == before + 1
    # Approving the used approval again on the page changes nothing.
    alice_browser.post(page_path(decision["approval_url"]), {"decision": "approve"})
    assert status_of(gs, approval) == "used"
    assert ApprovalDecision.objects.filter(decision="approved", via=ApprovalVia.PAGE).count() == 1


def test_a_declined_approval_is_refused_and_stays_declined(gs, reorder, on_page, alice_browser):
    decision = ask(gs, reorder)
    page = alice_browser.post(page_path(decision["approval_url"]), {"decision": "decline"})
    assert page.status_code == 200 and b'data-status="declined"' in page.content
    assert status_of(gs, decision["approval"]) == "declined"
    before = GalleryHistory.objects.count()
    refused = gs.dsh.execute(gs.session, REORDER, reorder, approval=decision["approval"])
    assert_error(refused, 403, "approval_declined")
    assert GalleryHistory.objects.count() == before
    assert ToolCall.objects.filter(tool_name=REORDER, outcome="approval_declined").count() == 1
    # A replayed approve after the decline changes nothing.
    alice_browser.post(page_path(decision["approval_url"]), {"decision": "approve"})
    assert status_of(gs, decision["approval"]) == "declined"
    recorded = ApprovalDecision.objects.exclude(decision="asked").get(
        approval__token_hash=token_digest(decision["approval"]))
    assert (recorded.decision, recorded.via, recorded.session_public_id) == ("declined", "page", gs.session)


def test_a_pending_approval_expires(gs, reorder, on_page):
    decision = ask(gs, reorder)
    ApprovalGrant.objects.filter(token_hash=token_digest(decision["approval"])).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    assert status_of(gs, decision["approval"]) == "expired"
    refused = gs.dsh.execute(gs.session, REORDER, reorder, approval=decision["approval"])
    assert_error(refused, 403, "approval_required", details={"reason": "expired"})


def test_a_host_approval_reads_approved_until_used(gs, reorder):
    decision = ask(gs, reorder)
    assert status_of(gs, decision["approval"]) == "approved"
    assert gs.dsh.execute(gs.session, REORDER, reorder, approval=decision["approval"]).status_code == 200
    assert status_of(gs, decision["approval"]) == "used"


def test_the_status_of_an_approval_is_for_its_own_session_only(gs, reorder, on_page, other_dsh, dsh, world):
    approval = ask(gs, reorder)["approval"]
    other_client = other_dsh.open_session(world.alice)["session"]
    assert_error(other_dsh.get(f"sessions/{gs.session}/approvals/{approval}"), 404, "unknown_session")
    assert_error(other_dsh.get(f"sessions/{other_client}/approvals/{approval}"), 404, "unknown_approval")
    same_client = dsh.open_session(world.alice)["session"]
    assert_error(dsh.get(f"sessions/{same_client}/approvals/{approval}"), 404, "unknown_approval")
    for unknown in ("apv_" + "x" * 43, "nonsense", "apv_" + "y" * 200):
        assert_error(dsh.get(f"sessions/{gs.session}/approvals/{unknown}"), 404, "unknown_approval")


def test_another_session_cannot_use_a_page_approval(gs, reorder, on_page, alice_browser, dsh, world):
    decision = ask(gs, reorder)
    alice_browser.post(page_path(decision["approval_url"]), {"decision": "approve"})
    other = dsh.open_session(world.alice)["session"]
    refused = dsh.execute(other, REORDER, reorder, approval=decision["approval"])
    assert_error(refused, 403, "approval_required", details={"reason": "invalid"})
    assert status_of(gs, decision["approval"]) == "approved"


def test_page_tools_are_checked_against_the_catalog():
    assert page_tool_names() == ("arkme_id_change", "arkme_extension_preview_delete", REORDER,
                                 "arkme_group_member_add")
    assert page_tools_problems(["*"]) == [] and page_tools_problems(list(page_tool_names())) == []
    assert page_tools_problems(["arkme_context"])  # a read asks for no approval
    assert page_tools_problems(["nope"]) and page_tools_problems(["*", REORDER])


def test_an_unknown_page_tool_stops_start_up(monkeypatch):
    from config.environment import env_names

    monkeypatch.setenv("ARKME_APPROVAL_PAGE_TOOLS", f" {REORDER}, ,arkme_id_change,{REORDER}")
    assert env_names("ARKME_APPROVAL_PAGE_TOOLS") == (REORDER, "arkme_id_change")
    monkeypatch.setenv("ARKME_APPROVAL_PAGE_TOOLS", "*,arkme_id_change")
    with pytest.raises(ImproperlyConfigured, match="ARKME_APPROVAL_PAGE_TOOLS"):
        env_names("ARKME_APPROVAL_PAGE_TOOLS")
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "t", "ARKME_APPROVAL_PAGE_TOOLS": "arkme_nope"}
    started = subprocess.run([sys.executable, "manage.py", "check"], cwd=django_settings.BASE_DIR, env=env,
                             capture_output=True, text=True, check=False)
    assert started.returncode != 0
    assert "ARKME_APPROVAL_PAGE_TOOLS" in started.stderr and "'arkme_nope'" in started.stderr
    env["ARKME_APPROVAL_PAGE_TOOLS"] = f"{REORDER},arkme_group_member_add"
    started = subprocess.run([sys.executable, "manage.py", "check"], cwd=django_settings.BASE_DIR, env=env,
                             capture_output=True, text=True, check=False)
    assert started.returncode == 0, started.stderr


def test_an_earlier_mcp_client_brings_the_page_approval_in_meta(dsh, session, world, on_page):
    """The MCP door of 2025 takes a REST approval in ``_meta``: a page approval counts there too
    only once the account approved it on the page."""
    client, arguments = Mcp(dsh, session, version=LEGACY), {"arkme_id": "alice_page"}
    decision = dsh.pre_execute(session, "arkme_id_change", arguments).json()
    meta = {"io.arkme/approval": decision["approval"]}
    assert_tool_error(client.call("arkme_id_change", arguments, meta=meta), "approval_pending")
    browser_of(world.alice).post(page_path(decision["approval_url"]), {"decision": "approve"})
    assert value_of(client.call("arkme_id_change", arguments, meta=meta))["account"]["arkme_id"] == "alice_page"


def test_the_schema_states_the_page_additions(dsh):
    schema = dsh.get("schema/?format=json").json()
    status = schema["paths"]["/dsh/v1/sessions/{session}/approvals/{approval}"]["get"]
    assert status["operationId"] == "approval_status" and {"200", "404"} <= set(status["responses"])
    components = schema["components"]["schemas"]
    assert components["ApprovalStatusEnum"]["enum"] == ["pending", "approved", "declined", "expired", "used"]
    assert "approval_url" in components["PreExecuteDecision"]["properties"]
    codes = set(components["ErrorCodeEnum"]["enum"])
    assert {"approval_pending", "approval_declined", "unknown_approval"} <= codes
    execute = schema["paths"]["/dsh/v1/sessions/{session}/tools/{name}/execute"]["post"]
    assert "approval_pending" in execute["description"]
