"""Sessions: opening, the session view and its ETag, phases, closing, ownership."""
from __future__ import annotations

import pytest

from arkme.conversations.models import AgentSession
from tests.support.dsh import make_dsh
from tests.support.errors import assert_error

SYSTEM = ["arkme_context", "arkme_id_change"]
GROUPS = ["arkme_group_member_candidates", "arkme_group_member_add"]
BUSINESS_CORE = SYSTEM + ["arkme_extension_preview_delete", "arkme_extension_preview_reorder"] + GROUPS
BUSINESS_ALL = SYSTEM + ["arkme_extension_preview_add", "arkme_extension_preview_delete",
                         "arkme_extension_preview_reorder"] + GROUPS


def tool_names(view):
    return [tool["name"] for tool in view["tools"]]


def test_catalog_lists_every_module_and_the_profiles(dsh):
    body = dsh.get("catalog").json()
    assert [t["name"] for t in body["tools"]] == BUSINESS_ALL
    assert body["tools"][1]["id"] == "arkme.id.change@1"
    assert body["tools"][2] | {"profiles": None} == {
        "name": "arkme_extension_preview_add", "id": "arkme.extension_preview.add@1", "kind": "business",
        "phase": "attachments", "effect": "write", "grant": "explicit-user-write", "approval": "conversation",
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False},
        "profiles": None}
    assert body["default_profile"] == "business"
    assert {p["name"] for p in body["profiles"]} == {"business", "atomic", "hybrid", "disabled"}


def test_open_session_defaults_to_business(dsh, world):
    view = dsh.open_session(world.alice)
    assert view["profile"] == "business"
    assert view["phases"] == ["core"]
    assert tool_names(view) == BUSINESS_CORE
    assert "arkme_context" in view["prompt"]
    assert set(view) == {"session", "profile", "phases", "revision", "tools", "prompt"}


def test_default_profile_follows_the_setting(dsh, world, settings):
    settings.ARKME_TOOL_PROFILE = "disabled"
    assert dsh.open_session(world.alice)["profile"] == "disabled"


def test_atomic_shows_the_system_tools_alone(dsh, world):
    view = dsh.open_session(world.alice, profile="atomic")
    assert tool_names(view) == SYSTEM
    mounted = dsh.put(f"sessions/{view['session']}/phases/attachments").json()
    assert tool_names(mounted) == SYSTEM
    assert "arkme_extension_preview" not in mounted["prompt"]


def test_hybrid_shows_system_and_business(dsh, world):
    view = dsh.open_session(world.alice, profile="hybrid")
    assert tool_names(view) == BUSINESS_CORE
    assert tool_names(dsh.put(f"sessions/{view['session']}/phases/attachments").json()) == BUSINESS_ALL


def test_disabled_profile_has_no_tools_and_no_prompt(dsh, world):
    view = dsh.open_session(world.alice, profile="disabled")
    assert view["tools"] == [] and view["prompt"] == ""
    mounted = dsh.put(f"sessions/{view['session']}/phases/attachments").json()
    assert mounted["tools"] == [] and mounted["prompt"] == ""


@pytest.mark.parametrize("body,field,code", [
    ({"profile": "nope"}, "profile", "unknown_profile"),
    ({"workspace": "../etc"}, "workspace", "invalid_workspace"),
    ({"workspace": "a" * 65}, "workspace", "invalid_request"),
    ({"workspace": "has space"}, "workspace", "invalid_workspace"),
    ({"extra": 1}, "extra", "invalid_request"),
])
def test_bad_session_requests_are_400(dsh, world, body, field, code):
    response = dsh.post("sessions", {"account": world.alice.public_id, **body})
    assert field in assert_error(response, 400, code)["details"]["fields"]
    assert AgentSession.objects.count() == 0


def test_missing_account_is_400(dsh, db):
    response = dsh.post("sessions", {})
    assert assert_error(response, 400, "invalid_request")["details"]["fields"] == ["account"]


def test_unknown_or_inactive_account_is_404(dsh, world):
    assert_error(dsh.post("sessions", {"account": "acc_unknown"}), 404, "unknown_account")
    world.bob.is_active = False
    world.bob.save()
    response = dsh.post("sessions", {"account": world.bob.public_id})
    assert_error(response, 404, "unknown_account")
    assert AgentSession.objects.count() == 0


def test_malformed_json_is_400(dsh, db):
    response = dsh.api.post("/dsh/v1/sessions", data="{not json", content_type="application/json")
    assert_error(response, 400, "malformed_request")


def test_client_limited_to_profiles_gets_403_for_others(world):
    limited = make_dsh("limited", profiles=["atomic"])
    assert limited.post("sessions", {"account": world.alice.public_id, "profile": "atomic"}).status_code == 201
    response = limited.post("sessions", {"account": world.alice.public_id, "profile": "business"})
    assert_error(response, 403, "profile_not_allowed")


def test_session_view_etag_and_304(dsh, world):
    session = dsh.open_session(world.alice)["session"]
    response = dsh.get(f"sessions/{session}")
    etag = response["ETag"]
    assert etag == f'"{response.json()["revision"]}"'
    not_modified = dsh.get(f"sessions/{session}", HTTP_IF_NONE_MATCH=etag)
    assert not_modified.status_code == 304 and not_modified.content == b""
    # The validator and the headers every answer carries; no representation metadata.
    assert not_modified["ETag"] == etag and "Content-Type" not in not_modified
    assert not_modified["Allow"] == response["Allow"] and not_modified["X-Content-Type-Options"] == "nosniff"
    assert dsh.get(f"sessions/{session}", HTTP_IF_NONE_MATCH='"other"').status_code == 200


@pytest.mark.parametrize("header, status", [
    ('W/{etag}', 304),                 # If-None-Match compares weakly (RFC 9110, 13.1.2)
    ('"a", W/{etag}, "b"', 304),
    ('"a",{etag}', 304),
    ("*", 304),                        # any current representation
    ('W/"other"', 200),
    ('{etag}x', 200),                  # not a list of entity tags: compared with nothing
    ("", 200),
])
def test_if_none_match_as_http_compares_it(dsh, world, header, status):
    session = dsh.open_session(world.alice)["session"]
    etag = dsh.get(f"sessions/{session}")["ETag"]
    response = dsh.get(f"sessions/{session}", HTTP_IF_NONE_MATCH=header.format(etag=etag))
    assert response.status_code == status
    if status == 304:
        assert response["ETag"] == etag and response.content == b""


def test_mount_and_dispose_attachments(dsh, world):
    view = dsh.open_session(world.alice)
    session = view["session"]
    mounted = dsh.put(f"sessions/{session}/phases/attachments").json()
    assert mounted["phases"] == ["core", "attachments"]
    assert tool_names(mounted) == BUSINESS_ALL
    assert "arkme_extension_preview_add" in mounted["prompt"]
    assert dsh.put(f"sessions/{session}/phases/attachments").json() == mounted  # idempotent
    disposed = dsh.delete(f"sessions/{session}/phases/attachments").json()
    assert disposed["phases"] == ["core"]
    assert tool_names(disposed) == BUSINESS_CORE
    assert "arkme_extension_preview_add" not in disposed["prompt"]
    assert disposed["revision"] == view["revision"]
    # Disposal withdraws the tool at execute time too, and remounting restores it.
    add = {"action": "cancel", "extension": "ext_x", "operation": "op_x"}
    assert_error(dsh.execute(session, "arkme_extension_preview_add", add), 404, "unknown_tool")
    assert dsh.delete(f"sessions/{session}/phases/attachments").status_code == 200
    # The ETag from before the change no longer matches after it.
    dsh.put(f"sessions/{session}/phases/attachments")
    assert dsh.get(f"sessions/{session}", HTTP_IF_NONE_MATCH=f'"{view["revision"]}"').status_code == 200
    assert dsh.get(f"sessions/{session}", HTTP_IF_NONE_MATCH=f'"{mounted["revision"]}"').status_code == 304


def test_another_clients_session_is_404(dsh, other_dsh, world):
    session = dsh.open_session(world.alice)["session"]
    for response in (
        other_dsh.get(f"sessions/{session}"),
        other_dsh.put(f"sessions/{session}/phases/attachments"),
        other_dsh.delete(f"sessions/{session}"),
        other_dsh.post(f"sessions/{session}/messages", {"id": "m1", "text": "hi"}),
        other_dsh.execute(session, "arkme_context", {}),
        other_dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "mallory1"}),
    ):
        assert_error(response, 404, "unknown_session")
    assert dsh.get(f"sessions/{session}").status_code == 200


def test_closed_session_is_404_for_every_call(dsh, world):
    session = dsh.open_session(world.alice)["session"]
    assert dsh.delete(f"sessions/{session}").status_code == 204
    assert_error(dsh.get(f"sessions/{session}"), 404, "unknown_session")
    assert_error(dsh.execute(session, "arkme_context", {}), 404, "unknown_session")
    assert_error(dsh.put(f"sessions/{session}/phases/attachments"), 404, "unknown_session")
    assert_error(dsh.delete(f"sessions/{session}"), 404, "unknown_session")


def test_a_deactivated_accounts_session_is_404_for_reads_and_writes(dsh, world):
    from arkme.accounts.models import Account

    session = dsh.open_session(world.alice)["session"]
    Account.objects.filter(pk=world.alice.pk).update(is_active=False)
    assert_error(dsh.get(f"sessions/{session}"), 404, "unknown_session")
    assert_error(dsh.execute(session, "arkme_context", {}), 404, "unknown_session")
    assert_error(dsh.put(f"sessions/{session}/phases/attachments"), 404, "unknown_session")
    Account.objects.filter(pk=world.alice.pk).update(is_active=True)
    assert dsh.get(f"sessions/{session}").status_code == 200


def test_a_session_read_is_one_statement_with_its_account(dsh, world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from arkme.conversations.sessions import session_for_client

    session = dsh.open_session(world.alice)["session"]
    with CaptureQueriesContext(connection) as queries:
        found = session_for_client(dsh.client, session)
        assert (found.account.public_id, found.account_id, found.profile) == (
            world.alice.public_id, world.alice.pk, "business")
    assert len(queries) == 1


def test_idle_session_expires(dsh, world, settings):
    session = dsh.open_session(world.alice)["session"]
    settings.ARKME_SESSION_IDLE_SECONDS = 60
    from datetime import timedelta

    from django.utils import timezone
    AgentSession.objects.filter(public_id=session).update(last_seen_at=timezone.now() - timedelta(seconds=61))
    assert_error(dsh.get(f"sessions/{session}"), 404, "unknown_session")


def test_unknown_api_path_is_json_404(dsh, db):
    response = dsh.get("nothing/here")
    assert_error(response, 404, "not_found")


def test_wrong_method_is_405_envelope(dsh, db):
    response = dsh.api.delete("/dsh/v1/catalog")
    assert_error(response, 405, "method_not_allowed")


def test_the_catalog_body_is_encoded_once(dsh, monkeypatch):
    from toolregistry.api import views
    from toolregistry.metadata import ToolMetadata

    first = dsh.get("catalog")
    assert first.status_code == 200 and first["Content-Type"] == "application/json"
    calls = []
    real = ToolMetadata.as_dict
    monkeypatch.setattr(ToolMetadata, "as_dict", lambda self: calls.append(self) or real(self))
    again = dsh.get("catalog")
    assert again.json() == first.json() and calls == []
    # Another catalog object (a new deployment's) is encoded afresh.
    monkeypatch.setattr(views, "CATALOG", views.Catalog(modules=views.CATALOG.modules[:1],
                                                        profile_kinds=views.CATALOG.profile_kinds, guidance=()))
    assert [tool["name"] for tool in dsh.get("catalog").json()["tools"]] == ["arkme_context"] and calls
