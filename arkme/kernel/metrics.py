"""Prometheus metrics: what the service counts, and the endpoint that serves them.

``GET /metrics`` answers only a request bearing ``ARKME_METRICS_TOKEN``
(``Authorization: Bearer <token>``); without the setting the endpoint does not exist (404).
Under gunicorn's several processes, set ``PROMETHEUS_MULTIPROC_DIR`` to an empty folder:
each process then writes its samples there and the endpoint adds them up (gunicorn.conf.py
removes a dead worker's files).

Labels are closed vocabularies (tool names from the catalog, error codes from the
registry, a few words of our own), never ids, refs or arguments.
"""
from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

TOOL_CALLS = Counter("arkme_tool_calls_total", "Tool calls by tool, outcome (ok or the error code) and surface.",
                     ["tool", "outcome", "surface"])
# A tool call's latency buckets, the one set both counts use: Prometheus' histogram (in
# seconds) and the hourly roll-up the staff dashboard draws its p50 and p95 from (in ms, stored
# a row an hour: changing them changes what stored rows mean). The last bucket is open.
LATENCY_BOUNDS_MS = (10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
TOOL_SECONDS = Histogram("arkme_tool_call_seconds", "Tool call duration by tool, outcome and surface.",
                         ["tool", "outcome", "surface"], buckets=tuple(ms / 1000 for ms in LATENCY_BOUNDS_MS))
APPROVALS = Counter("arkme_approvals_total",
                    "Pre-execute approvals: asked, used, declined, or refused (expired, used again, "
                    "invalid, for other arguments, card changed).", ["event"])
TASK_WAIT = Histogram("arkme_task_wait_seconds", "How long a request waited on a task's answer, by how it ended "
                      "(ok, failed, timeout, unavailable).", ["end"], buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30))
IMAGES_REFUSED = Counter("arkme_images_refused_total",
                         "Images refused by a bound or a check (too large, too complex, dimensions, "
                         "SVG render limits, format), by error code.", ["code"])
HTTP_REQUESTS = Counter("arkme_http_requests_total",
                        "HTTP responses by method, route (the URL pattern, or 'unmatched') and status class "
                        "(2xx, 3xx, 4xx, 5xx), 5xx from exceptions included.", ["method", "route", "status"])
STORE_FAULTS = Counter("arkme_blob_store_faults_total", "Object store operations that failed, by operation.",
                       ["operation"])
TOOL_CALLS_THROTTLED = Counter("arkme_tool_calls_throttled_total",
                               "Tool calls refused past a limit (429 throttled), by tool and by the scope of the "
                               "limit that refused them (client, account or session).", ["tool", "scope"])
RATE_LIMITER_FAULTS = Counter("arkme_rate_limiter_faults_total",
                              "Tool calls whose limits could not be counted (the limiter's store unreachable), by "
                              "what happened to the call: refused (a write, 503) or allowed (a read).", ["call"])



def status_class(status: int) -> str:
    return f"{status // 100}xx" if 100 <= status < 600 else "other"


def count_response(method: str, route: str, status: int) -> None:
    """One response: ``route`` is the URL pattern that matched, never the path (no ids or
    tokens in a label)."""
    HTTP_REQUESTS.labels(method, route, status_class(status)).inc()


def http_responses() -> dict[str, int]:
    """HTTP responses by status class, as this node has counted them (all its processes with
    ``PROMETHEUS_MULTIPROC_DIR``, else this process) since it started."""
    totals: dict[str, int] = {}
    families = (multiprocess.MultiProcessCollector(None).collect() if os.environ.get("PROMETHEUS_MULTIPROC_DIR")
                else HTTP_REQUESTS.collect())
    for family in families:
        if family.name != "arkme_http_requests":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                key = sample.labels.get("status", "other")
                totals[key] = totals.get(key, 0) + int(sample.value)
    return totals


# Gauges read from the database at scrape time, registered by the domains that own the data.
_database_collectors: list[Collector] = []


def register_database_collector(collector: Collector) -> None:
    """A collector whose samples are read when scraped (counts of rows), in every registry."""
    _database_collectors.append(collector)
    REGISTRY.register(collector)


def _registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for collector in _database_collectors:
        registry.register(collector)
    return registry


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = settings.ARKME_METRICS_TOKEN
    if not token:
        raise Http404()
    scheme, _, offered = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(offered.strip().encode(), token.encode()):
        response = HttpResponse("A valid metrics token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)

