"""Traces: tool calls as GenAI execute_tool spans, MCP requests as MCP server spans, approvals
and confirmations as span events; off unless OTEL_* asks."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from arkme.kernel.tracing import tracing_recheck, tracing_requested
from tests.support.mcp import Mcp, accept
from toolregistry.models import ApprovalGrant

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def _provider():
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)  # once per process, as an SDK's provider is
    tracing_recheck()  # installed after the process's first calls
    return provider


@pytest.fixture
def spans(_provider):
    if trace.get_tracer_provider() is not _provider:
        pytest.skip("another tracer provider was installed first in this process")
    _EXPORTER.clear()
    return _EXPORTER


def named(exporter, name):
    return [span for span in exporter.get_finished_spans() if span.name == name]


def events(span):
    return [(event.name, dict(event.attributes or {})) for event in span.events]


def test_a_rest_call_is_an_execute_tool_span(spans, dsh, session):
    dsh.execute(session, "arkme_context", {})
    dsh.execute(session, "arkme_context", {"bogus": 1})
    ok, refused = named(spans, "execute_tool arkme_context")
    assert ok.attributes["gen_ai.operation.name"] == "execute_tool"
    assert ok.attributes["gen_ai.tool.name"] == "arkme_context" and ok.attributes["arkme.surface"] == "rest"
    assert "error.type" not in ok.attributes
    assert refused.attributes["error.type"] == "invalid_arguments"
    assert refused.status.status_code.name == "ERROR"


def test_an_mcp_call_is_a_server_span_around_the_tool_span(spans, dsh, session):
    Mcp(dsh, session).call("arkme_context", {})
    [server] = named(spans, "tools/call arkme_context")
    [tool] = named(spans, "execute_tool arkme_context")
    assert server.kind == SpanKind.SERVER
    assert tool.parent.span_id == server.context.span_id
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["mcp.protocol.version"] == "2026-07-28"
    assert server.attributes["gen_ai.tool.name"] == "arkme_context" and server.attributes["network.transport"] == "tcp"
    assert tool.attributes["arkme.surface"] == "mcp"
    Mcp(dsh, session).rpc("tools/call", {"name": "arkme_made_up", "arguments": {}})
    [unknown] = named(spans, "tools/call unknown")
    assert unknown.attributes["error.type"] == "-32602"


def test_approvals_are_events_asked_used_refused_expired(spans, dsh, session):
    arguments = {"arkme_id": "alice_traced"}
    decision = dsh.pre_execute(session, "arkme_id_change", arguments).json()
    [asking] = named(spans, "pre_execute arkme_id_change")
    assert events(asking) == [("arkme.approval.asked", {"arkme.approval.page": False})]
    dsh.execute(session, "arkme_id_change", arguments, approval=decision["approval"])
    dsh.execute(session, "arkme_id_change", arguments, approval=decision["approval"])
    used, again = named(spans, "execute_tool arkme_id_change")
    assert ("arkme.approval.used", {}) in events(used)
    assert ("arkme.approval.refused", {"arkme.approval.reason": "used"}) in events(again)
    late = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_late"}).json()
    ApprovalGrant.objects.filter(used_at__isnull=True).update(expires_at=ApprovalGrant.objects.first().created_at
                                                              - timedelta(seconds=1))
    dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_late"}, approval=late["approval"])
    assert ("arkme.approval.expired", {}) in events(named(spans, "execute_tool arkme_id_change")[-1])
    assert all("alice" not in str(attrs) for span in spans.get_finished_spans() for _, attrs in events(span))


def test_mcp_decisions_and_confirmations_are_events(spans, gs):
    client = Mcp(gs.dsh, gs.session)
    client.call_answering("arkme_id_change", {"arkme_id": "alice_no"}, accept(approve=False))
    server = named(spans, "tools/call arkme_id_change")
    recorded = [event for span in server for event in events(span)]
    assert ("arkme.approval.asked", {}) in recorded
    assert ("arkme.approval.decided", {"arkme.approval.decision": "declined"}) in recorded
    prepared = gs.prepare(source="workspace", workspace_paths=gs.write_many(1)).json()["result"]
    spans.clear()
    client.call_answering("arkme_extension_preview_add", {"action": "confirm", "extension": gs.extension,
                                                          "operation": prepared["operation"]}, accept(reply="确认"))
    recorded = [event for span in named(spans, "tools/call arkme_extension_preview_add") for event in events(span)]
    assert ("arkme.confirmation.asked", {}) in recorded
    assert ("arkme.confirmation.answered", {"arkme.confirmation.replied": True}) in recorded


@pytest.mark.parametrize(("environ", "on"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
])
def test_tracing_is_off_unless_the_otel_variables_ask(environ, on):
    assert tracing_requested(environ) is on


def test_a_configured_process_exports_over_otlp():
    script = ("import django; django.setup()\n"
              "from opentelemetry import trace\n"
              "provider = trace.get_tracer_provider()\n"
              "print(type(provider).__name__, provider.resource.attributes.get('service.name'))\n")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_SECRET_KEY": "x",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    out = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.split() == ["TracerProvider", "arkme-tool-registry"]


def test_without_a_provider_spans_are_skipped_not_attached(monkeypatch):
    from arkme.kernel import tracing

    def attached(*args, **kwargs):
        raise AssertionError("a no-op span was attached to the context")

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    monkeypatch.setattr(tracing, "_recording", None)  # asked again, of the provider above
    monkeypatch.setattr(tracing.tracer, "start_as_current_span", attached)
    with tracing.span("execute_tool x", {"gen_ai.tool.name": "x"}) as span:
        assert span is trace.INVALID_SPAN and not span.is_recording()
        span.set_attribute("error.type", "x")  # what callers do on a refusal: a no-op
        assert trace.get_current_span() is trace.INVALID_SPAN


def test_whether_spans_are_recorded_is_asked_once_until_rechecked(monkeypatch):
    from arkme.kernel import tracing

    asked = []
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: asked.append(1) or trace.ProxyTracerProvider())
    monkeypatch.setattr(tracing, "_recording", None)
    assert [tracing.tracing_on() for _ in range(3)] == [False] * 3 and len(asked) == 1
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: asked.append(1) or TracerProvider())
    assert tracing.tracing_on() is False and len(asked) == 1  # installed later: not seen until rechecked
    tracing.tracing_recheck()
    assert tracing.tracing_on() is True and len(asked) == 2


def test_with_a_provider_spans_are_recorded(spans):
    from arkme.kernel import tracing

    with tracing.span("a span", {"gen_ai.tool.name": "x"}, SpanKind.SERVER) as span:
        assert span.is_recording() and trace.get_current_span() is span
    (recorded,) = named(spans, "a span")
    assert recorded.kind is SpanKind.SERVER and recorded.attributes["gen_ai.tool.name"] == "x"


CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def rest_execute(exporter):
    """The REST execute calls' server spans (the fixtures' own requests are spans too)."""
    return [span for span in exporter.get_finished_spans() if span.kind == SpanKind.SERVER
            and span.name.endswith("/execute")]


def test_a_rest_call_continues_the_callers_trace(spans, dsh, session):
    dsh.execute(session, "arkme_context", {}, HTTP_TRACEPARENT=TRACEPARENT, HTTP_TRACESTATE="dsh=t61rcWkgMzE")
    [server] = rest_execute(spans)
    [tool] = named(spans, "execute_tool arkme_context")
    assert server.name == "POST /dsh/v1/sessions/<str:session>/tools/<str:name>/execute"
    assert f"{server.context.trace_id:032x}" == CALLER_TRACE and f"{server.parent.span_id:016x}" == CALLER_SPAN
    assert server.parent.is_remote and server.context.trace_state.get("dsh") == "t61rcWkgMzE"
    assert tool.parent.span_id == server.context.span_id and tool.context.trace_id == server.context.trace_id
    assert server.attributes["http.response.status_code"] == 200


@pytest.mark.parametrize("traceparent", [
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # an invalid trace id
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # a forbidden version
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",  # no flags
    "not a traceparent", "00-" + "a" * 500,
])
def test_a_malformed_traceparent_is_ignored_and_a_new_trace_begins(spans, dsh, session, traceparent):
    assert dsh.execute(session, "arkme_context", {}, HTTP_TRACEPARENT=traceparent).status_code == 200
    [server] = rest_execute(spans)
    assert server.parent is None and f"{server.context.trace_id:032x}" != CALLER_TRACE


def test_an_mcp_call_continues_the_trace_of_its_http_request(spans, dsh, session):
    Mcp(dsh, session).call("arkme_context", {}, traceparent=TRACEPARENT)
    [server] = named(spans, "tools/call arkme_context")
    [tool] = named(spans, "execute_tool arkme_context")
    assert f"{server.context.trace_id:032x}" == CALLER_TRACE and f"{server.parent.span_id:016x}" == CALLER_SPAN
    assert tool.parent.span_id == server.context.span_id


def test_an_mcp_call_continues_the_trace_in_its_meta_before_the_headers(spans, dsh, session):
    meta_trace, meta_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    Mcp(dsh, session).call("arkme_context", {}, meta={"traceparent": f"00-{meta_trace}-{meta_span}-01",
                                                      "tracestate": "congo=t61rcWkgMzE"},
                           traceparent=TRACEPARENT)
    [server] = named(spans, "tools/call arkme_context")
    assert f"{server.context.trace_id:032x}" == meta_trace and f"{server.parent.span_id:016x}" == meta_span
    assert server.context.trace_state.get("congo") == "t61rcWkgMzE"
    spans.clear()
    Mcp(dsh, session).call("arkme_context", {}, meta={"traceparent": "00-bogus"})
    [fresh] = named(spans, "tools/call arkme_context")
    assert fresh.parent is None
