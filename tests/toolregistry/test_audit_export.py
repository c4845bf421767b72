"""``arkme_audit export``: calls and approval decisions as JSON lines, nothing secret."""
from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from toolregistry.models import ApprovalDecision, ApprovalGrant, ToolCall


def export(since: str) -> list[dict]:
    out = io.StringIO()
    call_command("arkme_audit", "export", "--since", since, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_export_writes_calls_and_decisions_as_json_lines(dsh, session):
    arguments = {"arkme_id": "alice_export"}
    decision = dsh.pre_execute(session, "arkme_id_change", arguments).json()
    assert dsh.execute(session, "arkme_id_change", arguments, approval=decision["approval"]).status_code == 200
    lines = export((timezone.now() - timedelta(days=1)).date().isoformat())
    calls = [line for line in lines if line["type"] == "tool_call"]
    decisions = [line for line in lines if line["type"] == "approval_decision"]
    assert {line["type"] for line in lines} == {"tool_call", "approval_decision"}
    call = ToolCall.objects.get(tool_name="arkme_id_change")
    approval = ApprovalGrant.objects.get()
    [exported] = [line for line in calls if line["id"] == call.pk]
    assert exported["approval"] == approval.pk and exported["outcome"] == "ok" and exported["session"] == session
    assert [(d["decision"], d["via"], d["approval"], d["tool_call"]) for d in decisions] == [
        ("asked", "host", approval.pk, None), ("approved", "host", approval.pk, None),
        ("used", "host", approval.pk, call.pk)]
    text = json.dumps(lines)
    assert "alice_export" not in text and decision["approval"] not in text and approval.token_hash not in text
    assert "arguments" not in text


def test_export_starts_at_since(dsh, session):
    dsh.execute(session, "arkme_context", {})
    ToolCall.objects.update(created_at=timezone.now() - timedelta(days=10))
    ApprovalDecision.objects.update(created_at=timezone.now() - timedelta(days=10))
    dsh.execute(session, "arkme_context", {})
    since = (timezone.now() - timedelta(days=2)).isoformat()
    assert [line["id"] for line in export(since)] == [ToolCall.objects.order_by("id").last().pk]
    assert len(export((timezone.now() - timedelta(days=11)).date().isoformat())) == 2


def test_export_refuses_a_date_it_cannot_read(db):
    with pytest.raises(CommandError, match="--since"):
        export("last tuesday")


def test_export_streams(dsh, session, monkeypatch):
    """Rows are read through ``iterator`` (a server-side cursor on PostgreSQL), never a list."""
    from django.db.models import QuerySet

    from toolregistry import audit_export

    chunks: list[int] = []
    real = QuerySet.iterator

    def iterator(queryset, chunk_size=None):
        chunks.append(chunk_size)
        return real(queryset, chunk_size=chunk_size)

    monkeypatch.setattr(QuerySet, "iterator", iterator)
    for _ in range(3):
        dsh.execute(session, "arkme_context", {})
    lines = audit_export.audit_export(since=timezone.now() - timedelta(days=1))
    first = next(lines)
    assert first["type"] == "tool_call" and chunks == [audit_export.CHUNK]
    assert len([first, *lines]) == 3 and chunks == [audit_export.CHUNK, audit_export.CHUNK]
