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

A caller's trace goes on here: a W3C ``traceparent`` (and ``tracestate``) on the HTTP request,
or in an MCP request's ``params._meta``, makes the server span a child of the caller's span
(``caller_context``). One that is missing or malformed is ignored, and the span starts a trace.
"""
from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

tracer = trace.get_tracer("arkme")
_NO_SPAN = nullcontext(trace.INVALID_SPAN)

SERVICE_NAME = "arkme-tool-registry"
_W3C = TraceContextTextMapPropagator()
# A traceparent is 55 characters; a tracestate at most 32 members of a few hundred. Longer
# values are not read at all.
_TRACEPARENT_MAX, _TRACESTATE_MAX = 128, 4096


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
    tracing_recheck()
    return True


def _sdk_provider_class() -> type:
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider


_recording: bool | None = None


def tracing_on() -> bool:
    """Whether spans are recorded: whether a tracer provider is installed, as the API said at
    the process's first call (and again after ``configure_tracing`` or ``tracing_recheck``).

    Asking the API on every call cost two look-ups of ``OTEL_PYTHON_TRACER_PROVIDER`` in the
    environment a call while no provider is installed (the default), each raising and catching
    a ``KeyError``: about 3 µs, a fifth of a call's routing. A provider is installed once per
    process, before the first call (``configure_tracing`` at start-up, an SDK's
    auto-instrumentation as the interpreter starts, or that variable, which the API reads at
    the first call); code installing one later calls ``tracing_recheck``."""
    global _recording
    if _recording is None:
        _recording = not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    return _recording


def tracing_recheck() -> None:
    """Ask the API again at the next call whether a tracer provider is installed."""
    global _recording
    _recording = None


def caller_context(traceparent: object, tracestate: object = None) -> Context | None:
    """The caller's span as a parent, from W3C Trace Context values (a header's or an MCP
    ``_meta``'s), or None when there is none or it is malformed: the span then starts a new
    trace. Untrusted: the propagator reads only its own grammar."""
    if not isinstance(traceparent, str) or len(traceparent) > _TRACEPARENT_MAX:
        return None
    carrier = {"traceparent": traceparent}
    if isinstance(tracestate, str) and len(tracestate) <= _TRACESTATE_MAX:
        carrier["tracestate"] = tracestate
    context = _W3C.extract(carrier)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def span(name: str, attributes: dict[str, Any], kind: trace.SpanKind = trace.SpanKind.INTERNAL,
         parent: Context | None = None) -> AbstractContextManager[trace.Span]:
    """``tracer.start_as_current_span``, or the API's no-op span while no tracer provider is
    installed (the default; ``configure_tracing``, an SDK's auto-instrumentation or a test
    installs one). The no-op still attached itself to the context and detached again, about
    5 µs a span, twice on every MCP call. ``parent``: the caller's context (``caller_context``);
    by default the current span's."""
    if not tracing_on():
        return _NO_SPAN
    return tracer.start_as_current_span(name, context=parent, kind=kind, attributes=attributes)


def event(name: str, **attributes: Any) -> None:
    """An event on the span being recorded (a no-op when none is)."""
    trace.get_current_span().add_event(name, attributes=attributes)
