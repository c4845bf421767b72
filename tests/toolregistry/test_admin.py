"""Staff pages load, and show no secrets."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.support.errors import assert_error
from toolregistry.models import ToolCall


@pytest.mark.parametrize("model", [
    "accounts/account", "conversations/dshclient", "conversations/agentsession", "toolregistry/approvalgrant",
    "toolregistry/toolcall", "toolregistry/idempotencyrecord", "galleries/extension", "groups/group",
    "groups/privatechat",
])
def test_admin_changelists_load(staff, dsh, world, model):
    dsh.open_session(world.alice)
    response = staff.get(f"/admin/{model}/")
    assert response.status_code == 200


def test_tool_call_audit_is_visible_and_read_only(staff, dsh, world):
    session = dsh.open_session(world.alice)["session"]
    dsh.execute(session, "arkme_context", {})
    page = staff.get("/admin/toolregistry/toolcall/").content.decode()
    assert "ok · 200" in page and "Alice" in page and dsh.client.name in page
    assert staff.get("/admin/toolregistry/toolcall/add/").status_code == 403


def test_client_created_in_admin_shows_its_key_once(staff, db):
    response = staff.post("/admin/conversations/dshclient/add/", {"name": "from-admin", "profiles": "[]"}, follow=True)
    assert response.status_code == 200
    text = response.content.decode()
    assert "shown only now: dsh_" in text
    from arkme.conversations.models import DshClient
    client = DshClient.objects.get(name="from-admin")
    key = text.split("shown only now: ")[1].split("<")[0].strip()
    from arkme.conversations.clients import client_for_key
    assert client_for_key(key) == client


def test_a_client_name_with_a_control_character_is_a_form_error_in_admin(staff, db):
    from arkme.conversations.models import DshClient

    response = staff.post("/admin/conversations/dshclient/add/", {"name": "tab\there", "profiles": "[]"})
    assert response.status_code == 200 and "printable characters only" in response.content.decode()
    assert not DshClient.objects.exists()


def test_non_staff_is_turned_away(client, db):
    user = get_user_model().objects.create_user("plain", password="pw-123456")
    client.force_login(user)
    response = client.get("/admin/toolregistry/toolcall/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_revoke_action_revokes_through_the_service(staff, dsh):
    from arkme.conversations.models import DshClient

    response = staff.post("/admin/conversations/dshclient/", {"action": "revoke", "_selected_action": [dsh.client.pk]},
                          follow=True)
    assert "Revoked 1 client key(s)." in response.content.decode()
    assert DshClient.objects.get(pk=dsh.client.pk).revoked_at is not None
    assert_error(dsh.get("catalog"), 401, "not_authenticated")


def test_the_audit_filters_by_surface(staff, dsh, world):
    from tests.support.mcp import Mcp

    session = dsh.open_session(world.alice)["session"]
    dsh.execute(session, "arkme_context", {})
    Mcp(dsh, session).call("arkme_group_member_candidates", {"source_ref": "nope"})
    refused = ToolCall.objects.get(surface="mcp").outcome
    assert refused != "ok"
    over_mcp = staff.get("/admin/toolregistry/toolcall/?surface__exact=mcp").content.decode()
    assert f"{refused} · " in over_mcp and "ok · 200" not in over_mcp
    over_rest = staff.get("/admin/toolregistry/toolcall/?surface__exact=rest").content.decode()
    assert "ok · 200" in over_rest and f"{refused} · " not in over_rest


def test_the_index_names_groups_once_and_links_no_missing_site(staff):
    import re

    page = staff.get("/admin/").content.decode()
    assert len(re.findall(r">Groups</a>", page)) == 1  # Arkme's groups; no permission groups beside them
    assert "View site" not in page
    assert "Arkme tool registry" in page


def test_the_audit_search_matches_one_field_per_term(staff, dsh, world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from toolregistry.models import ToolCall

    session = dsh.open_session(world.alice)["session"]
    dsh.execute(session, "arkme_context", {})
    dsh.execute(session, "arkme_group_member_candidates", {"source_ref": "nope"})
    refused = ToolCall.objects.exclude(outcome="ok").get()
    ok = ToolCall.objects.get(outcome="ok")

    def shown(term: str) -> str:
        return staff.get("/admin/toolregistry/toolcall/", {"q": term}).content.decode()

    assert "ok · 200" in shown("ok") and f"{refused.outcome} · " not in shown("ok")
    assert f"{refused.outcome} · " in shown(refused.outcome) and "ok · 200" not in shown(refused.outcome)
    assert "ok · 200" in shown("arkme_context") and f"{refused.outcome} · " not in shown("arkme_context")
    assert "ok · 200" in shown(ok.request_id) and f"{refused.outcome} · " not in shown(ok.request_id)
    both = shown(session)
    assert "ok · 200" in both and f"{refused.outcome} · " in both
    with CaptureQueriesContext(connection) as queries:
        shown("ok")
    audit = [q["sql"] for q in queries.captured_queries if ToolCall._meta.db_table in q["sql"]]
    assert audit and not any(" OR " in sql for sql in audit)
