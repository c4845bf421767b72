"""Operator commands for clients and the catalog."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from arkme.conversations.models import DshClient
from tests.support.errors import assert_error


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_dsh_client_create_prints_a_working_key_on_the_last_line():
    output = run("arkme_dsh_client", "create", "host-a", "--profiles", "business,atomic")
    key = output.strip().splitlines()[-1]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/dsh/v1/catalog").status_code == 200
    assert DshClient.objects.get(name="host-a").profiles == ["business", "atomic"]


@pytest.mark.django_db
def test_dsh_client_list_and_revoke():
    key = run("arkme_dsh_client", "create", "host-a").strip().splitlines()[-1]
    assert "host-a" in run("arkme_dsh_client", "list")
    assert key not in run("arkme_dsh_client", "list")
    run("arkme_dsh_client", "revoke", "host-a")
    assert "revoked" in run("arkme_dsh_client", "list")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_error(api.get("/dsh/v1/catalog"), 401, "not_authenticated")


@pytest.mark.django_db
def test_dsh_client_errors_are_clear():
    run("arkme_dsh_client", "create", "host-a")
    with pytest.raises(CommandError, match="exists"):
        run("arkme_dsh_client", "create", "host-a")
    with pytest.raises(CommandError, match="Unknown profile"):
        run("arkme_dsh_client", "create", "host-b", "--profiles", "bogus")
    with pytest.raises(CommandError, match="No such client"):
        run("arkme_dsh_client", "revoke", "nobody")


@pytest.mark.django_db
@pytest.mark.parametrize("name,why", [
    ("x" * 101, "at most 100 characters"),
    ("tab\tname", "printable"),
    ("line\nbreak", "printable"),
    ("bell\x07", "printable"),
    ("   ", "needs a name"),
])
def test_a_client_name_the_field_cannot_hold_is_refused_by_what_is_wrong(name, why):
    with pytest.raises(CommandError, match=why):
        run("arkme_dsh_client", "create", name)
    assert not DshClient.objects.exists()


@pytest.mark.django_db
def test_a_client_name_at_the_limit_is_kept_and_surrounding_space_dropped():
    run("arkme_dsh_client", "create", " " + "名" * 100 + " ")
    assert DshClient.objects.get().name == "名" * 100


@pytest.mark.django_db
def test_two_creates_of_one_name_at_once_make_one_client(monkeypatch):
    """The unique name decides, not a check made before the insert."""
    from django.db.models import QuerySet

    run("arkme_dsh_client", "create", "host-a")
    monkeypatch.setattr(QuerySet, "exists", lambda self: False)  # the other create looked first
    with pytest.raises(CommandError, match="exists"):
        run("arkme_dsh_client", "create", "host-a")
    assert DshClient.objects.filter(name="host-a").count() == 1


def test_catalog_list_is_a_table_per_profile_and_phases():
    core = run("arkme_catalog", "list", "--phases", "core")
    assert "arkme_context" in core and "arkme_id_change" in core
    assert run("arkme_catalog", "list", "--profile", "disabled").strip().endswith("phases attachments,core.")
    with pytest.raises(CommandError):
        run("arkme_catalog", "list", "--profile", "nope")
    with pytest.raises(CommandError):
        run("arkme_catalog", "list", "--phases", "core,bogus")


def test_catalog_export_json_and_check():
    exported = json.loads(run("arkme_catalog", "export", "--json"))
    assert [t["metadata"]["id"] for t in exported["tools"]][:2] == ["arkme.context@1", "arkme.id.change@1"]
    assert exported["default_profile"] == "business"
    assert "valid" in run("arkme_catalog", "check")


def test_the_audit_outlives_its_session_and_is_pruned_only_by_retention(dsh, world):
    import io
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from arkme.conversations.models import AgentSession
    from toolregistry.models import ToolCall

    session = dsh.open_session(world.alice)["session"]
    dsh.execute(session, "arkme_context", {})
    dsh.execute(session, "arkme_context", {})
    AgentSession.objects.filter(public_id=session).delete()
    assert ToolCall.objects.filter(session_public_id=session).count() == 2
    ToolCall.objects.filter(pk=ToolCall.objects.order_by("pk").first().pk).update(
        created_at=timezone.now() - timedelta(days=40))
    out = io.StringIO()
    call_command("arkme_audit", "prune", "--older-than", "30", stdout=out)
    assert "Deleted 1 tool call" in out.getvalue()
    assert ToolCall.objects.count() == 1


def test_staff_cannot_delete_audit_rows(staff, dsh, world):
    from toolregistry.models import ToolCall

    session = dsh.open_session(world.alice)["session"]
    dsh.execute(session, "arkme_context", {})
    call = ToolCall.objects.get()
    assert staff.get(f"/admin/toolregistry/toolcall/{call.pk}/delete/").status_code == 403
    assert staff.post("/admin/toolregistry/toolcall/", {"action": "delete_selected", "_selected_action": [call.pk]}
                      ).status_code in (200, 302)
    assert ToolCall.objects.filter(pk=call.pk).exists()
