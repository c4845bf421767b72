"""The cross-account matrix: every tool against another account's objects is refused, and
nothing is written."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.conf import settings

from arkme.accounts.models import Account
from galleries.models import Blob, GalleryHistory, GalleryItem, PendingOperation
from galleries.services.account_images import account_image_create, image_ref_for
from groups.models import ChatMessage, Invitation, Membership
from tests.support import images
from tests.support.dsh import make_dsh
from tests.support.errors import (
    ANY_CODE,
    assert_denied,
    assert_error,
    assert_rpc_error,
    assert_tool_error,
    check_envelope,
)
from tests.support.mcp import Mcp, accept, value_of


@dataclass
class Foreign:
    """Bob's things, as far as Alice's agent could ever get hold of them."""

    extension: str
    item: str
    image_ref: str
    source_ref: str
    candidate_ref: str
    operation: str
    session: str
    approval: str
    bob_dsh: object = None


@pytest.fixture
def matrix(world, dsh):
    bob_dsh = make_dsh("bob-host")
    root = settings.ARKME_WORKSPACE_ROOT / "bobws"
    root.mkdir(parents=True, exist_ok=True)
    for i in range(2):
        (root / f"{i}.png").write_bytes(images.png((400, 400), (i, 90, 90)))
    bob = bob_dsh.open_session(world.bob, workspace="bobws")["session"]
    bob_dsh.put(f"sessions/{bob}/phases/attachments")
    add = "arkme_extension_preview_add"
    prepared = bob_dsh.execute(bob, add, {"action": "prepare", "extension": world.bob_ext.public_id,
                                          "source": "workspace", "workspace_paths": ["0.png"]}).json()["result"]
    bob_dsh.post(f"sessions/{bob}/messages", {"id": "b1", "text": "确认"})
    item = bob_dsh.execute(bob, add, {"action": "confirm", "extension": world.bob_ext.public_id,
                                      "operation": prepared["operation"]}).json()["result"]["gallery"]["items"][0]["item"]
    pending = bob_dsh.execute(bob, add, {"action": "prepare", "extension": world.bob_ext.public_id,
                                         "source": "workspace", "workspace_paths": ["1.png"]}).json()["result"]["operation"]
    context = bob_dsh.execute(bob, "arkme_context", {}).json()["result"]
    source_ref = context["groups"][0]["source_ref"]
    from groups.services import private_chat_ensure
    private_chat_ensure(a=world.bob, b=world.carol)
    candidate = bob_dsh.execute(bob, "arkme_group_member_candidates", {"source_ref": source_ref}).json()["result"]
    approval = bob_dsh.pre_execute(bob, "arkme_id_change", {"arkme_id": "bob_new_id"}).json()["approval"]
    logo = account_image_create(owner=world.bob, name="bob-logo", data=images.png((512, 512), (3, 3, 3)))
    return Foreign(extension=world.bob_ext.public_id, item=item, image_ref=image_ref_for(logo),
                   source_ref=source_ref, candidate_ref=candidate["candidates"][0]["candidate_ref"],
                   operation=pending, session=bob, approval=approval, bob_dsh=bob_dsh)


def snapshot():
    return (
        list(GalleryItem.objects.order_by("pk").values_list("pk", "gallery_id", "position")),
        GalleryHistory.objects.count(), Blob.objects.count(),
        list(PendingOperation.objects.order_by("pk").values_list("pk", "status")),
        list(Membership.objects.order_by("pk").values_list("pk", "group_id", "account_id")),
        Invitation.objects.count(), ChatMessage.objects.count(),
        list(Account.objects.order_by("pk").values_list("arkme_id", flat=True)),
    )


def ALICE_CASES(f: Foreign, alice_ext: str):
    add = "arkme_extension_preview_add"
    return {
        "prepare into another's extension": (add, {"action": "prepare", "extension": f.extension, "source": "workspace",
                                                   "workspace_paths": ["a.png"]}),
        "prepare from another's image_ref": (add, {"action": "prepare", "extension": alice_ext, "source": "image_ref",
                                                   "image_ref": f.image_ref}),
        "confirm another's operation": (add, {"action": "confirm", "extension": f.extension, "operation": f.operation}),
        "confirm another's operation via own extension": (add, {"action": "confirm", "extension": alice_ext,
                                                                "operation": f.operation}),
        "cancel another's operation": (add, {"action": "cancel", "extension": f.extension, "operation": f.operation}),
        "delete another's item": ("arkme_extension_preview_delete", {"extension": f.extension, "items": [f.item], "revision": 1}),
        "delete another's item via own extension": ("arkme_extension_preview_delete",
                                                    {"extension": alice_ext, "items": [f.item], "revision": 0}),
        "reorder another's gallery": ("arkme_extension_preview_reorder", {"extension": f.extension, "order": [f.item], "revision": 1}),
        "candidates of another's source_ref": ("arkme_group_member_candidates", {"source_ref": f.source_ref}),
        "add with another's source_ref": ("arkme_group_member_add", {"source_ref": f.source_ref,
                                                                      "candidate_refs": [f.candidate_ref]}),
    }


def refused(response) -> bool:
    """Refused by a 4xx or a deny, each in the envelope; a 5xx is no refusal."""
    if response.status_code >= 400:
        return response.status_code < 500 and bool(assert_error(response, response.status_code, ANY_CODE))
    body = response.json()
    if "decision" in body:
        return body["decision"] == "deny" and bool(assert_denied(response, ANY_CODE))
    results = body.get("result", {}).get("results")
    return bool(results) and all(r["outcome"] not in ("added", "invited") for r in results)


CASE_NAMES = sorted(ALICE_CASES(Foreign(*["x"] * 8), "x"))


@pytest.mark.parametrize("case", CASE_NAMES)
@pytest.mark.parametrize("step", ["pre-execute", "execute"])
def test_tools_refuse_another_accounts_objects(figures, matrix, dsh, world, case, step):
    alice = dsh.open_session(world.alice, workspace="bobws")["session"]
    dsh.put(f"sessions/{alice}/phases/attachments")
    tool, arguments = ALICE_CASES(matrix, world.alice_ext.public_id)[case]
    before = snapshot()
    if step == "pre-execute":
        response = dsh.pre_execute(alice, tool, arguments)
        decision = response.json().get("decision")
        ok = refused(response)
        if decision in ("ask", "allow"):  # the human approved, or nothing to approve: execute must refuse
            approval = {"approval": response.json()["approval"]} if decision == "ask" else {}
            response = dsh.execute(alice, tool, arguments, **approval)
            ok = refused(response)
    else:
        response = dsh.execute(alice, tool, arguments)
        ok = refused(response)
    figures.add("cross_account_cases")
    figures.add("cross_account_refused", ok)
    assert ok, response.content
    assert snapshot() == before


@pytest.mark.parametrize("case", CASE_NAMES)
def test_tools_refuse_another_accounts_objects_over_mcp(figures, matrix, dsh, world, case):
    """The MCP door, with a host whose human approves every card and says 确认 to every question."""
    alice = dsh.open_session(world.alice, workspace="bobws")["session"]
    dsh.put(f"sessions/{alice}/phases/attachments")
    tool, arguments = ALICE_CASES(matrix, world.alice_ext.public_id)[case]
    before = snapshot()
    result = Mcp(dsh, alice).call_answering(tool, arguments, accept(approve=True, reply="确认"))
    if result["isError"]:
        ok = assert_tool_error(result, ANY_CODE)["code"] != "internal_error"
    else:
        outcomes = value_of(result).get("results")
        ok = bool(outcomes) and all(r["outcome"] not in ("added", "invited") for r in outcomes)
    figures.add("cross_account_cases")
    figures.add("cross_account_refused", ok)
    assert ok, result
    assert snapshot() == before


def test_another_clients_session_and_state_over_mcp(figures, matrix, dsh, world):
    """Bob's session is not there for alice's client; bob's sealed approval state does not
    follow a call into alice's session."""
    before = snapshot()
    foreign_session = Mcp(dsh, matrix.session).rpc("tools/list")
    bob_client = Mcp(matrix.bob_dsh, matrix.session)
    asked = bob_client.call("arkme_id_change", {"arkme_id": "bob_new_id"})
    [key] = asked["inputRequests"]
    alice = Mcp(dsh, dsh.open_session(world.alice)["session"])
    moved = alice.rpc("tools/call", {"name": "arkme_id_change", "arguments": {"arkme_id": "bob_new_id"},
                                     "requestState": asked["requestState"],
                                     "inputResponses": {key: {"action": "accept", "content": {"approve": True}}}})
    checks = [foreign_session.status_code == 404, moved.json().get("error", {}).get("code") == -32602]
    figures.add("cross_account_cases", len(checks))
    figures.add("cross_account_refused", sum(checks))
    assert all(checks) and snapshot() == before
    check_envelope(assert_rpc_error(foreign_session, 404, -32600)["data"], "unknown_session")
    assert_rpc_error(moved, 200, -32602)


def test_alice_candidate_refs_in_bobs_call_are_invalid(figures, matrix, dsh, world):
    """Bob's candidate_ref presented with Alice's own source_ref: judged invalid, nothing added."""
    alice = dsh.open_session(world.alice)["session"]
    own = dsh.execute(alice, "arkme_context", {}).json()["result"]["groups"][0]["source_ref"]
    before = snapshot()
    response = dsh.approve_and_execute(alice, "arkme_group_member_add",
                                       {"source_ref": own, "candidate_refs": [matrix.candidate_ref]})
    ok = response.json()["result"]["results"][0]["outcome"] == "invalid_ref"
    figures.add("cross_account_cases")
    figures.add("cross_account_refused", ok)
    assert ok and snapshot() == before


def test_another_clients_session_and_approvals(figures, matrix, dsh, world):
    before = snapshot()
    foreign_session = dsh.execute(matrix.session, "arkme_context", {})
    alice = dsh.open_session(world.alice)["session"]
    foreign_approval = dsh.execute(alice, "arkme_id_change", {"arkme_id": "bob_new_id"}, approval=matrix.approval)
    checks = [foreign_session.status_code == 404, foreign_approval.status_code == 403]
    figures.add("cross_account_cases", len(checks))
    figures.add("cross_account_refused", sum(checks))
    assert all(checks) and snapshot() == before
    assert_error(foreign_session, 404, "unknown_session")
    assert_error(foreign_approval, 403, "approval_required")
