"""OpenTelemetry traces: off unless the standard ``OTEL_*`` variables ask for them.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set, and
neither ``OTEL_SDK_DISABLED=true`` nor ``OTEL_TRACES_EXPORTER=none``, spans go to that OTLP
(HTTP) collector in batches; the exporter reads the rest of its ``OTEL_*`` variables itself.
Otherwise the API's no-op tracer makes every span below free.

Spans follow the semantic conventions: a tool call is ``execute_tool {gen_ai.tool.name}``
(GenAI), an MCP request ``{mcp.method.name} {target}`` (MCP, server side). Approvals and
confirmations have no convention yet, so they are span events of our own vocabulary:

- ``arkme.approval.asked``: a card was put to the human (pre-execute, or an MCP elicitation);
- ``arkme.approval.decided`` with ``arkme.approval.decision`` ``approved`` or ``declined``
  (MCP, where the service sees the answer);
- ``arkme.approval.used``: a call spent an approval;
- ``arkme.approval.expired``, and ``arkme.approval.refused`` with ``arkme.approval.reason``
  (``missing``, ``invalid``, ``used``, ``other_arguments``, ``card_changed``);
- ``arkme.confirmation.asked`` and ``arkme.confirmation.answered`` (the 确认 over MCP).

Events never carry arguments, refs, tokens or ids.
"""
from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace

tracer = trace.get_tracer("arkme")
_NO_SPAN = nullcontext(trace.INVALID_SPAN)

SERVICE_NAME = "arkme-tool-registry"


def tracing_requested(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure_tracing() -> bool:
    """Install the SDK's provider with an OTLP exporter when the environment asks; once."""
    if not tracing_requested() or isinstance(trace.get_tracer_provider(), _sdk_provider_class()):
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True


def _sdk_provider_class() -> type:
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider


def span(name: str, attributes: dict[str, Any], kind: trace.SpanKind = trace.SpanKind.INTERNAL,
         ) -> AbstractContextManager[trace.Span]:
    """``tracer.start_as_current_span``, or the API's no-op span while no tracer provider is
    installed (the default; ``configure_tracing``, an SDK's auto-instrumentation or a test
    installs one). The no-op still attached itself to the context and detached again, about
    5 µs a span, twice on every MCP call."""
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return _NO_SPAN
    return tracer.start_as_current_span(name, kind=kind, attributes=attributes)


def event(name: str, **attributes: Any) -> None:
    """An event on the span being recorded (a no-op when none is)."""
    trace.get_current_span().add_event(name, attributes=attributes)
