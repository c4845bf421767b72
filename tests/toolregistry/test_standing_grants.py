"""Standing grants over REST: the scopes a card offers, a grant opened by an approval used with
the ``session`` scope, the calls it covers (and every call it does not), its revocation by
staff and by the account, and the approval record it leaves."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from galleries.models import GalleryHistory
from galleries.services.extensions import extension_create
from tests.support.errors import assert_error
from tests.support.groups import ref_of
from toolregistry.models import ApprovalDecision, ApprovalGrant, StandingGrant, ToolCall
from toolregistry.standing_grants import standing_grants_live

REORDER = "arkme_extension_preview_reorder"
DELETE = "arkme_extension_preview_delete"
MEMBER_ADD = "arkme_group_member_add"


def execute(dsh, session, tool, arguments, **body):
    return dsh.post(f"sessions/{session}/tools/{tool}/execute", {"arguments": arguments, **body})


def ask(dsh, session, tool, arguments):
    decision = dsh.pre_execute(session, tool, arguments).json()
    assert decision["decision"] == "ask", decision
    return decision


@pytest.fixture
def filled(gs):
    """Alice's gallery with four items: a reorder's arguments, given an order."""
    body = gs.add_confirmed(gs.write_many(4))
    return [item["item"] for item in body["gallery"]["items"]]


def reorder_args(gs, order=None):
    gallery = gs.gallery()
    items = [item["item"] for item in gallery["items"]]
    return {"extension": gs.extension, "order": order or items[::-1], "revision": gallery["revision"]}


def grant_reorder(gs):
    """Reorder once with the ``session`` scope: the standing grant it opens."""
    arguments = reorder_args(gs)
    decision = ask(gs.dsh, gs.session, REORDER, arguments)
    response = execute(gs.dsh, gs.session, REORDER, arguments, approval=decision["approval"], scope="session")
    assert response.status_code == 200, response.content
    return StandingGrant.objects.get()


# --- the scopes a card offers ------------------------------------------------------------------

def test_reorder_and_member_add_offer_the_session_scope_delete_and_id_change_do_not(gs, filled, world, refs,
                                                                                   candidates, session, dsh):
    reorder = ask(gs.dsh, gs.session, REORDER, reorder_args(gs))
    delete = ask(gs.dsh, gs.session, DELETE, {"extension": gs.extension, "items": filled[:1],
                                               "revision": gs.gallery()["revision"]})
    id_change = ask(dsh, session, "arkme_id_change", {"arkme_id": "alice_scopes"})
    member_add = ask(dsh, session, MEMBER_ADD, {"source_ref": refs["open-group"],
                                                "candidate_refs": [ref_of(candidates, "open-group", "Carol")]})
    assert reorder["card"]["scopes"] == ["once", "session"] == member_add["card"]["scopes"]
    assert delete["card"]["scopes"] == ["once"] == id_change["card"]["scopes"]
    stored = {grant.tool_name: grant for grant in ApprovalGrant.objects.all()}
    assert stored[REORDER].scopes_offered == ["once", "session"]
    assert stored[REORDER].target == f"extension:{gs.extension}"
    assert stored[MEMBER_ADD].target == f"group:{world.open_group.public_id}"
    assert stored[DELETE].scopes_offered == ["once"] and stored[DELETE].target == ""
    assert stored[REORDER].card["title"] == reorder["card"]["title"]


def test_a_scope_the_card_did_not_offer_is_400_and_leaves_the_approval_unused(gs, filled):
    arguments = {"extension": gs.extension, "items": filled[:1], "revision": gs.gallery()["revision"]}
    decision = ask(gs.dsh, gs.session, DELETE, arguments)
    refused = execute(gs.dsh, gs.session, DELETE, arguments, approval=decision["approval"], scope="session")
    assert assert_error(refused, 400, "invalid_request")["details"]["fields"] == ["scope"]
    assert len(gs.gallery()["items"]) == 4 and not StandingGrant.objects.exists()
    used = execute(gs.dsh, gs.session, DELETE, arguments, approval=decision["approval"])
    assert used.status_code == 200, used.content


def test_an_unknown_scope_is_400(gs, filled):
    arguments = reorder_args(gs)
    decision = ask(gs.dsh, gs.session, REORDER, arguments)
    refused = execute(gs.dsh, gs.session, REORDER, arguments, approval=decision["approval"], scope="forever")
    assert_error(refused, 400, "invalid_request")


# --- what a grant covers -----------------------------------------------------------------------

def test_a_session_scope_opens_a_grant_that_covers_the_next_reorder(gs, filled, settings):
    grant = grant_reorder(gs)
    assert grant.tool_name == REORDER and grant.target == f"extension:{gs.extension}"
    assert grant.expires_at - grant.created_at == pytest.approx(
        timedelta(seconds=settings.ARKME_STANDING_GRANT_SECONDS), abs=timedelta(seconds=5))
    arguments = reorder_args(gs, order=sorted(filled))
    assert gs.dsh.pre_execute(gs.session, REORDER, arguments).json() == {"decision": "allow"}
    covered = execute(gs.dsh, gs.session, REORDER, arguments)
    assert covered.status_code == 200, covered.content
    assert [item["item"] for item in covered.json()["result"]["gallery"]["items"]] == sorted(filled)
    first, second = ToolCall.objects.filter(tool_name=REORDER).order_by("id")
    # The call that opened the grant names its approval and the grant; the covered one the grant alone.
    assert first.approval_id == grant.approval_id and first.standing_grant_id == grant.pk
    assert second.standing_grant_id == grant.pk and second.approval_id is None
    used = ApprovalDecision.objects.filter(decision="used").order_by("id")
    assert [(u.tool_call_id, u.approval_id, u.standing_grant_id, u.via) for u in used] == [
        (first.pk, grant.approval_id, grant.pk, "host"), (second.pk, None, grant.pk, "system")]


def _refused_and_nothing_written(gs, tool, arguments):
    history, done = GalleryHistory.objects.count(), ToolCall.objects.filter(outcome="ok").count()
    assert ask(gs.dsh, gs.session, tool, arguments)["card"]
    refused = execute(gs.dsh, gs.session, tool, arguments)
    assert_error(refused, 403, "approval_required")
    assert GalleryHistory.objects.count() == history and ToolCall.objects.filter(outcome="ok").count() == done
    assert not ApprovalDecision.objects.filter(decision="used", standing_grant__isnull=False,
                                               approval__isnull=True).exists()


def test_a_grant_never_covers_another_extension(gs, filled, world):
    grant_reorder(gs)
    other = extension_create(owner=world.alice, name="alice-other")
    gallery = gs.dsh.execute(gs.session, "arkme_context", {}).json()["result"]["extensions"]
    revision = next(e["gallery"]["revision"] for e in gallery if e["extension"] == other.public_id)
    arguments = {"extension": other.public_id, "order": ["x"], "revision": revision}
    decision = gs.dsh.pre_execute(gs.session, REORDER, arguments).json()
    assert decision["decision"] in ("ask", "deny")  # never allow: the grant is the other extension's
    assert_error(execute(gs.dsh, gs.session, REORDER, arguments), 403, "approval_required")


def test_a_grant_never_covers_another_tool(gs, filled):
    grant_reorder(gs)
    arguments = {"extension": gs.extension, "items": filled[:1], "revision": gs.gallery()["revision"]}
    _refused_and_nothing_written(gs, DELETE, arguments)


def test_a_grant_never_covers_another_session(gs, filled, dsh, world):
    grant_reorder(gs)
    other = dsh.open_session(world.alice)["session"]
    arguments = reorder_args(gs, order=sorted(filled))
    assert dsh.pre_execute(other, REORDER, arguments).json()["decision"] == "ask"
    assert_error(execute(dsh, other, REORDER, arguments), 403, "approval_required")


def test_an_expired_grant_covers_nothing(gs, filled):
    grant = grant_reorder(gs)
    StandingGrant.objects.filter(pk=grant.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    _refused_and_nothing_written(gs, REORDER, reorder_args(gs, order=sorted(filled)))


def test_a_closed_session_ends_its_grants(gs, filled, world):
    grant = grant_reorder(gs)
    arguments = reorder_args(gs, order=sorted(filled))
    assert gs.dsh.delete(f"sessions/{gs.session}").status_code == 204
    assert_error(execute(gs.dsh, gs.session, REORDER, arguments), 404, "unknown_session")
    assert grant not in standing_grants_live(world.alice)
    assert ToolCall.objects.filter(standing_grant=grant).count() == 1  # the call that opened it, alone
    assert not ApprovalDecision.objects.filter(decision="used", approval__isnull=True).exists()


def test_staff_revoke_a_grant_in_the_admin(gs, filled, staff):
    grant = grant_reorder(gs)
    listing = staff.get("/admin/toolregistry/standinggrant/")
    assert listing.status_code == 200 and "live" in listing.content.decode()
    response = staff.post("/admin/toolregistry/standinggrant/",
                          {"action": "revoke", "_selected_action": [grant.pk]}, follow=True)
    assert response.status_code == 200 and "Revoked 1 standing grant" in response.content.decode()
    grant.refresh_from_db()
    assert grant.revoked_at is not None and grant.revoked_via == "staff"
    assert ApprovalDecision.objects.filter(standing_grant=grant, decision="revoked", via="staff").count() == 1
    _refused_and_nothing_written(gs, REORDER, reorder_args(gs, order=sorted(filled)))
    assert staff.get(f"/admin/toolregistry/standinggrant/{grant.pk}/change/").status_code == 200


# --- member add: the group is the target ----------------------------------------------------------

def test_a_member_add_grant_covers_the_same_group_under_a_fresh_source_ref(dsh, session, refs, candidates, world):
    group = "approval-group"
    arguments = {"source_ref": refs[group], "candidate_refs": [ref_of(candidates, group, "Carol")]}
    decision = ask(dsh, session, MEMBER_ADD, arguments)
    assert execute(dsh, session, MEMBER_ADD, arguments, approval=decision["approval"],
                   scope="session").status_code == 200
    fresh = {g["name"]: g["source_ref"] for g in dsh.execute(session, "arkme_context", {}).json()["result"]["groups"]}
    again = {"source_ref": fresh[group], "candidate_refs": [ref_of(candidates, group, "Dave")]}
    assert dsh.pre_execute(session, MEMBER_ADD, again).json() == {"decision": "allow"}
    covered = execute(dsh, session, MEMBER_ADD, again)
    assert covered.status_code == 200, covered.content
    other_group = {"source_ref": refs["open-group"], "candidate_refs": [ref_of(candidates, "open-group", "Dave")]}
    assert dsh.pre_execute(session, MEMBER_ADD, other_group).json()["decision"] == "ask"
    assert_error(execute(dsh, session, MEMBER_ADD, other_group), 403, "approval_required")
    assert ToolCall.objects.filter(tool_name=MEMBER_ADD, outcome="ok").count() == 2
    assert world.open_group.memberships.filter(account=world.dave).count() == 0


# --- the approval record ----------------------------------------------------------------------------

def test_a_host_approval_is_recorded_asked_approved_used(dsh, session):
    arguments = {"arkme_id": "alice_record"}
    decision = ask(dsh, session, "arkme_id_change", arguments)
    assert execute(dsh, session, "arkme_id_change", arguments, approval=decision["approval"]).status_code == 200
    call = ToolCall.objects.get(tool_name="arkme_id_change")
    approval = ApprovalGrant.objects.get()
    assert call.approval_id == approval.pk and call.standing_grant_id is None
    rows = list(approval.decisions.order_by("id").values_list("decision", "via", "tool_call_id"))
    assert rows == [("asked", "host", None), ("approved", "host", None), ("used", "host", call.pk)]


def test_a_call_that_fails_after_the_approval_leaves_it_unused_and_opens_no_grant(gs, filled):
    stale = {**reorder_args(gs), "revision": gs.gallery()["revision"] + 5}
    decision = ask(gs.dsh, gs.session, REORDER, stale)
    refused = execute(gs.dsh, gs.session, REORDER, stale, approval=decision["approval"], scope="session")
    assert_error(refused, 409, "revision_conflict")
    approval = ApprovalGrant.objects.get(tool_name=REORDER)
    assert approval.used_at is None and approval.scope == "once" and not StandingGrant.objects.exists()
    assert list(approval.decisions.values_list("decision", flat=True)) == ["asked"]
    assert ToolCall.objects.get(tool_name=REORDER).approval_id is None


def test_an_expired_approval_is_recorded_once(dsh, session):
    arguments = {"arkme_id": "alice_late"}
    decision = ask(dsh, session, "arkme_id_change", arguments)
    ApprovalGrant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    for _ in range(2):
        refused = execute(dsh, session, "arkme_id_change", arguments, approval=decision["approval"])
        assert assert_error(refused, 403, "approval_required")["details"]["reason"] == "expired"
    expired = ApprovalDecision.objects.filter(decision="expired")
    assert [(row.via, row.approval_id) for row in expired] == [("system", ApprovalGrant.objects.get().pk)]


def test_the_admin_shows_a_calls_approval_history(gs, filled, staff):
    grant = grant_reorder(gs)
    execute(gs.dsh, gs.session, REORDER, reorder_args(gs, order=sorted(filled)))
    first, second = ToolCall.objects.filter(tool_name=REORDER).order_by("id")
    page = staff.get(f"/admin/toolregistry/toolcall/{first.pk}/change/").content.decode().lower()
    assert "approval history" in page and "asked" in page and "approved" in page and "used" in page
    page = staff.get(f"/admin/toolregistry/toolcall/{second.pk}/change/").content.decode().lower()
    assert "approval decisions linked to this call" in page and "the registry itself" in page
    approval = staff.get(f"/admin/toolregistry/approvalgrant/{grant.approval_id}/change/").content.decode().lower()
    assert "approval history" in approval and approval.count("<td class=\"field-decision\">") >= 3
    decisions = staff.get("/admin/toolregistry/approvaldecision/")
    assert decisions.status_code == 200 and f"/admin/toolregistry/toolcall/{first.pk}/change/" in decisions.content.decode()


def test_the_decision_list_does_not_grow_with_the_record(staff, dsh, session):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def grow(to):
        have = ApprovalDecision.objects.count()
        ApprovalDecision.objects.bulk_create([
            ApprovalDecision(session_public_id=session, tool_name="arkme_id_change", decision="asked", via="host")
            for _ in range(have, to)])

    def statements():
        staff.get("/admin/toolregistry/approvaldecision/")
        with CaptureQueriesContext(connection) as queries:
            assert staff.get("/admin/toolregistry/approvaldecision/").status_code == 200
        return len(queries)

    ask(dsh, session, "arkme_id_change", {"arkme_id": "alice_many"})
    grow(10)
    small = statements()
    grow(300)
    assert statements() == small


def test_the_schema_states_the_scopes_on_the_card_and_the_scope_on_execute(db):
    from rest_framework.test import APIClient

    schemas = APIClient().get("/dsh/v1/schema/?format=json").json()["components"]["schemas"]
    assert schemas["CardView"]["properties"]["scopes"]["items"] == {"$ref": "#/components/schemas/ApprovalScopeEnum"}
    assert "scopes" in schemas["CardView"]["required"]
    assert schemas["ApprovalScopeEnum"]["enum"] == ["once", "session"]
    scope = schemas["ExecuteRequest_arkme_extension_preview_reorder"]["properties"]["scope"]
    assert {"$ref": "#/components/schemas/ApprovalScopeEnum"} in scope["oneOf"]
