"""Request ids and structured logs: one id from the response header to the log and the audit,
and nothing secret in any log line."""
from __future__ import annotations

import json
import logging

from arkme.kernel.logs import RequestIdFilter, StructuredFormatter
from tests.support.leaks import find_leaks
from tests.support.mcp import Mcp, accept
from toolregistry.models import ToolCall


def formatted(records) -> list[dict]:
    formatter, tag = StructuredFormatter(), RequestIdFilter()
    lines = []
    for record in records:
        if not hasattr(record, "request_id"):
            tag.filter(record)
        lines.append(json.loads(formatter.format(record)))
    return lines


def test_the_request_id_is_answered_and_audited(dsh, session):
    response = dsh.execute(session, "arkme_context", {})
    request_id = response["X-Request-ID"]
    assert len(request_id) == 32
    assert ToolCall.objects.get().request_id == request_id
    given = dsh.execute(session, "arkme_context", {}, HTTP_X_REQUEST_ID="gateway-trace-0001")
    assert given["X-Request-ID"] == "gateway-trace-0001"
    assert ToolCall.objects.filter(request_id="gateway-trace-0001").count() == 1


def test_an_unusable_request_id_is_replaced(dsh, session):
    for offered in ("short", "x" * 65, "has space in it", "<script>alert(1)</script>"):
        answered = dsh.get(f"sessions/{session}", HTTP_X_REQUEST_ID=offered)["X-Request-ID"]
        assert answered != offered and len(answered) == 32


def test_log_lines_are_json_with_the_request_id(dsh, session, caplog):
    caplog.set_level(logging.DEBUG)
    response = Mcp(dsh, session).call("arkme_context", {})
    assert not response["isError"]
    lines = formatted(caplog.records)
    call_lines = [line for line in lines if line["logger"] == "django_mcpz.calls"]
    assert call_lines and all(set(line) == {"time", "level", "logger", "message", "request_id"} for line in lines)
    assert len(call_lines[0]["request_id"]) == 32


def test_a_full_flow_over_both_doors_leaves_nothing_secret_in_the_logs(gs, refs, candidates, caplog, leak_guard):
    """Workspace paths, refs, approval tokens, keys and arguments: none in any log line."""
    caplog.set_level(logging.DEBUG)
    paths = gs.write_many(2)
    gs.add_confirmed(paths)
    client = Mcp(gs.dsh, gs.session)
    more = gs.write_many(1, start=5)
    client.call_answering("arkme_extension_preview_add", {
        "action": "prepare", "extension": gs.extension, "source": "workspace", "workspace_paths": more}, accept())
    found = candidates("open-group")["candidates"]
    decision = gs.dsh.pre_execute(gs.session, "arkme_group_member_add", {
        "source_ref": refs["open-group"], "candidate_refs": [found[0]["candidate_ref"]]}).json()
    gs.dsh.execute(gs.session, "arkme_group_member_add", {
        "source_ref": refs["open-group"], "candidate_refs": [found[0]["candidate_ref"]]}, approval=decision["approval"])
    client.call_answering("arkme_id_change", {"arkme_id": "alice_logged"}, accept(approve=True))
    gs.dsh.execute(gs.session, "arkme_context", {"bogus": "workspace/" + paths[0]})  # a refused call
    secrets = {*paths, *more, refs["open-group"], found[0]["candidate_ref"], decision["approval"], gs.dsh.key,
               "alice_logged"}
    lines = formatted(caplog.records)
    assert len(lines) > 5
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    assert not [secret for secret in secrets if secret in text]
    assert not [leak for line in lines for leak in find_leaks(line, secrets)]


def test_where_the_request_was_served_is_its_checked_host(rf, settings):
    from django.http import HttpResponse

    from arkme.kernel.logs import RequestIdMiddleware, served_at

    seen = []

    def view(request):
        seen.append(served_at())
        return HttpResponse()

    middleware = RequestIdMiddleware(view)
    settings.ALLOWED_HOSTS = ["arkme.example"]
    middleware(rf.get("/", HTTP_HOST="arkme.example:8443"))
    middleware(rf.get("/", HTTP_HOST="evil.example"))  # not allowed: never put in a link
    assert seen == ["http://arkme.example:8443", ""]
    assert served_at() == ""  # outside a request
