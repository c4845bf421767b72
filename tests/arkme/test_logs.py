"""Request ids and structured logs: one id from the response header to the log and the audit,
and nothing secret in any log line."""
from __future__ import annotations

import json
import logging

import pytest

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


# --- every answer counted, each 5xx one line, no secret in a path -----------------------------

def _boom(request, token):
    raise RuntimeError("a bug below every middleware")


def _refuse(request, token):
    from django.http import JsonResponse

    return JsonResponse({"error": {"code": "not_found"}}, status=404)


from django.urls import path as _path  # noqa: E402

urlpatterns = [_path("boom/<str:token>", _boom), _path("refuse/<str:token>", _refuse)]
JOIN_TOKEN = "Zq9xR2mN7vB4kL1pW8sT3yH6dF0gJ5cA-_uE2iO7rK4"


def _count(method, route, status):
    from arkme.kernel.metrics import HTTP_REQUESTS

    return HTTP_REQUESTS.labels(method, route, status)._value.get()


@pytest.mark.urls("tests.arkme.test_logs")
def test_an_exception_below_every_middleware_is_counted_and_one_json_line(db, caplog):
    from django.test import Client

    caplog.set_level(logging.INFO)
    before = _count("GET", "boom/<str:token>", "5xx")
    response = Client(raise_request_exception=False).get(f"/boom/{JOIN_TOKEN}?key=sk_live_abc&page=2")
    assert response.status_code == 500
    assert _count("GET", "boom/<str:token>", "5xx") == before + 1
    lines = formatted([r for r in caplog.records if r.levelno >= logging.ERROR])
    assert len(lines) == 1, lines  # Django's own "Internal Server Error" line is not a second one
    line = lines[0]
    assert line["request_id"] == response["X-Request-ID"]
    assert (line["logger"], line["route"], line["status"], line["method"]) == ("arkme.http", "boom/<str:token>", 500,
                                                                                 "GET")
    assert line["path"] == "/boom/[redacted]?key=[redacted]&page=[redacted]"
    assert "RuntimeError: a bug below every middleware" in line["exc_info"]
    text = json.dumps(lines) + "\n".join(r.getMessage() for r in caplog.records)
    assert JOIN_TOKEN not in text and "sk_live_abc" not in text


@pytest.mark.urls("tests.arkme.test_logs")
def test_refusals_and_unmatched_paths_are_counted_by_route_never_by_path(client, db):
    refused = _count("GET", "refuse/<str:token>", "4xx")
    unmatched = _count("GET", "unmatched", "4xx")
    odd = _count("other", "unmatched", "4xx")
    assert client.get(f"/refuse/{JOIN_TOKEN}").status_code == 404
    assert client.get(f"/nowhere/{JOIN_TOKEN}").status_code == 404
    assert client.generic("BREW", "/nowhere").status_code == 404
    assert _count("GET", "refuse/<str:token>", "4xx") == refused + 1
    assert _count("GET", "unmatched", "4xx") == unmatched + 1
    assert _count("other", "unmatched", "4xx") == odd + 1  # a method label is a closed set too


def test_every_url_parameter_named_like_a_secret_is_redacted():
    """Walks the URL conf: a parameter whose name says secret must be in SECRET_PARAMETERS, and
    a path of each such route comes out of the redaction without its value."""
    from django.urls import URLPattern, URLResolver, get_resolver, resolve

    from arkme.kernel.logs import SECRET_PARAMETERS, redacted_path

    def walk(patterns, prefix=""):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                yield prefix + str(entry.pattern)

    secretish = {"token", "key", "secret", "signature", "approval", "uidb64", "password", "nonce", "handle"}
    found = []
    for route in walk(get_resolver().url_patterns):
        names = set(__import__("re").findall(r"<(?:\w+:)?(\w+)>", route))
        for name in names & secretish:
            assert name in SECRET_PARAMETERS, route
        if names & SECRET_PARAMETERS and not route.startswith("^"):
            def value(match):
                converter, name = match.groups()
                if name in SECRET_PARAMETERS:
                    return f"{name}-{JOIN_TOKEN}"
                return "1" if converter == "int" else f"{name}-1"

            sample = "/" + __import__("re").sub(r"<(?:(\w+):)?(\w+)>", value, route)
            assert JOIN_TOKEN not in redacted_path(sample, resolve(sample)), route
            found.append(route)
    assert "groups/join/<str:token>" in found and "accounts/reset/<uidb64>/<token>/" in found
    assert "approvals/<str:handle>" in found and "dsh/v1/sessions/<str:session>/approvals/<str:approval>" in found


def test_paths_without_a_route_lose_their_token_like_segments_and_queries_their_values():
    from arkme.kernel.logs import redacted_target

    assert redacted_target(f"/groups/join/{JOIN_TOKEN}/x") == "/groups/join/[redacted]/x"
    assert redacted_target("/dsh/v1/sessions/ses_abc/tools/arkme_context/execute") == \
        "/dsh/v1/sessions/ses_abc/tools/arkme_context/execute"
    assert redacted_target("/accounts/login/", f"next=/groups/join/{JOIN_TOKEN}&x") == \
        "/accounts/login/?next=[redacted]&x"


def test_a_django_request_line_has_the_request_id_and_a_redacted_path(rf):
    """Django writes some lines once the middleware has returned (or without it): the request
    they carry gives the id, and their message loses the request's secret."""
    from django.urls import resolve

    from arkme.kernel.logs import ENVIRON_REQUEST_ID

    request = rf.get(f"/groups/join/{JOIN_TOKEN}")
    request.resolver_match = resolve(request.path)
    request.META[ENVIRON_REQUEST_ID] = "id-of-that-request"
    record = logging.LogRecord("django.security.csrf", logging.WARNING, __file__, 1,
                               "Forbidden (CSRF token missing.): %s", (request.path,), None)
    record.request = request
    line = formatted([record])[0]
    assert line["request_id"] == "id-of-that-request"
    assert JOIN_TOKEN not in line["message"] and line["message"].endswith("/groups/join/[redacted]")


def test_a_line_is_one_json_object_with_its_traceback_as_one_field():
    from arkme.kernel.logs import StructuredFormatter

    try:
        raise ValueError("multi\nline")
    except ValueError:
        import sys

        record = logging.LogRecord("arkme.x", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info())
    record.fields = {"status": 500, "route": "r", "arguments": {"secret": 1}}  # not in the closed list
    record.workspace_paths = ["secret.png"]  # a library's extra attribute
    text = StructuredFormatter().format(record)
    assert "\n" not in text
    line = json.loads(text)
    assert set(line) == {"time", "level", "logger", "message", "request_id", "status", "route", "exc_info"}
    assert line["message"] == "failed here" and "ValueError: multi\nline" in line["exc_info"]


def test_gevent_reports_an_unhandled_greenlet_error_as_one_log_line(caplog, capfd):
    import gevent

    from serverlog.web import LoggingHub

    hub = LoggingHub()
    try:
        caplog.set_level(logging.ERROR)
        try:
            raise KeyError("lost")
        except KeyError:
            import sys

            hub.handle_error("a greenlet", *sys.exc_info())
    finally:
        hub.destroy(destroy_loop=True)
        gevent.get_hub()  # the thread's own hub again
    records = [r for r in caplog.records if r.name == "gevent.hub"]
    assert len(records) == 1 and "KeyError" in formatted(records)[0]["exc_info"]
    assert "Traceback" not in capfd.readouterr().err


def test_a_task_runs_under_the_id_of_the_request_that_sent_it():
    from types import SimpleNamespace

    from arkme.kernel.logs import bind_request_id, current_request_id, unbind_request_id
    from config import celery as tasks

    headers: dict = {}
    token = bind_request_id("request-0123456789")
    try:
        tasks._carry_request_id(headers=headers)
    finally:
        unbind_request_id(token)
    assert headers == {tasks.REQUEST_ID_HEADER: "request-0123456789"}
    task = SimpleNamespace(request=SimpleNamespace(**headers))
    tasks._adopt_request_id(task_id="t1", task=task)
    assert current_request_id() == "request-0123456789"
    tasks._drop_request_id(task_id="t1")
    assert current_request_id() == ""
