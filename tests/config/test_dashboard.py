"""The staff dashboard: charts from aggregates, the same cost whatever the audit holds."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from arkme.conversations.models import AgentSession
from galleries.services.extensions import extension_create
from toolregistry.models import ToolCall
from toolregistry.rollups import tool_calls_roll_up


def audit(session, count):
    ToolCall.objects.bulk_create(ToolCall(
        session_id=session.pk, session_public_id=session.public_id, tool_name="arkme_context",
        outcome="ok" if i % 5 else "invalid_arguments", http_status=200 if i % 5 else 400, duration_ms=i % 300)
        for i in range(count))


@pytest.fixture
def session(dsh, world):
    return AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])


def test_staff_see_ten_charts_with_data(staff, session, gs):
    audit(session, 50)
    gs.prepare(source="workspace", workspace_paths=gs.write_many(1))  # a pending add
    gs.dsh.pre_execute(gs.session, "arkme_id_change", {"arkme_id": "alice_dash"})  # an approval asked
    tool_calls_roll_up()
    page = staff.get("/admin/dashboard/").content.decode()
    assert page.count('<svg class="arkme-chart"') == 10
    assert "invalid_arguments" in page and "arkme_context" in page
    # 10 of the 50, and the prepare: refusals, not server errors.
    assert ("<strong>51</strong> tool calls, server errors (5xx) <strong>0.0 %</strong>,\n"
            "     refusals (4xx) <strong>19.6 %</strong>") in page
    assert re.search(r"<title>asked: 1</title>", page)
    assert re.search(r"<title>under 5 min: 1</title>", page)
    assert 'href="/admin/dashboard/"' in staff.get("/admin/").content.decode()


def test_the_page_never_reads_the_audit_and_costs_the_same_at_any_size(staff, session):
    audit(session, 10)
    tool_calls_roll_up()
    staff.get("/admin/dashboard/")
    with CaptureQueriesContext(connection) as small:
        assert staff.get("/admin/dashboard/").status_code == 200
    audit(session, 2000)
    tool_calls_roll_up()
    with CaptureQueriesContext(connection) as large:
        assert staff.get("/admin/dashboard/").status_code == 200
    assert len(large) == len(small)
    assert not [q["sql"] for q in large.captured_queries if '"toolregistry_toolcall"' in q["sql"]]


def test_labels_are_escaped(staff, world):
    extension = extension_create(owner=world.bob, name="<script>alert(1)</script>")
    from galleries.models import Blob, GalleryItem

    blob = Blob.objects.create(sha256="a" * 64, size=1, width=400, height=400, format="png")
    for position in range(1, 21):
        GalleryItem.objects.create(gallery=extension.gallery, blob=blob if position == 1 else Blob.objects.create(
            sha256=f"{position:064x}", size=1, width=400, height=400, format="png"), position=position)
    page = staff.get("/admin/dashboard/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_only_staff(client, db):
    assert client.get("/admin/dashboard/").status_code == 302


def test_server_errors_are_shown_apart_from_refusals(staff, session, rf):
    """A 5xx outcome (the service failed) is not a refusal (the service said no): each has its
    rate and its line; and the node's HTTP answers by status class count every 5xx, tool call
    or not."""
    from arkme.kernel.logs import RequestIdMiddleware
    from arkme.kernel.metrics import http_responses

    ToolCall.objects.bulk_create(
        [ToolCall(session_id=session.pk, session_public_id=session.public_id, tool_name="arkme_context",
                  outcome="ok", http_status=200, duration_ms=5) for _ in range(16)]
        + [ToolCall(session_id=session.pk, session_public_id=session.public_id, tool_name="arkme_context",
                    outcome="invalid_arguments", http_status=400, duration_ms=5) for _ in range(3)]
        + [ToolCall(session_id=session.pk, session_public_id=session.public_id, tool_name="arkme_context",
                    outcome="internal_error", http_status=500, duration_ms=5)])
    tool_calls_roll_up()
    before = http_responses().get("5xx", 0)

    def failing(request):
        raise RuntimeError("a bug below every middleware")

    from django.core.handlers.exception import convert_exception_to_response

    assert RequestIdMiddleware(convert_exception_to_response(failing))(rf.get("/healthz")).status_code == 500
    assert http_responses().get("5xx", 0) == before + 1
    page = staff.get("/admin/dashboard/").content.decode()
    assert ("<strong>20</strong> tool calls, server errors (5xx) <strong>5.0 %</strong>,\n"
            "     refusals (4xx) <strong>15.0 %</strong>") in page
    assert f"<strong>{before + 1}</strong> server errors (5xx)" in page
    assert re.search(r"<title>\d\d:00 server errors %: 5</title>", page)
    assert re.search(r"<title>5xx: \d+</title>", page)


def test_throttled_calls_and_the_limits_in_force_are_shown(staff, dsh, world, settings, monkeypatch):
    from config.environment import parse_rate_limits
    from toolregistry import limits

    monkeypatch.setattr(limits, "clock", lambda: 1_800_000_000.0)  # one window for the three calls

    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_context=1/day/session,*=600/minute/client")
    settings.ARKME_RATE_LIMIT_REDIS_URL = None
    session = dsh.open_session(world.alice)["session"]
    statuses = [dsh.execute(session, "arkme_context", {}).status_code for _ in range(3)]
    assert statuses == [200, 429, 429]
    tool_calls_roll_up()
    page = staff.get("/admin/dashboard/").content.decode()
    assert "<title>arkme_context: 2</title>" in page.split("Throttled calls by tool")[-1]
    assert "counted in the database" in page
    assert "<strong>arkme_context: 1 a day per session</strong>; <strong>*: 600 a minute per client</strong>" in page
