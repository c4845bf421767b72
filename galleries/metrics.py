"""The galleries' metrics: the gauges read from the database when Prometheus scrapes, and the
count of images refused, taken where a refusal leaves the service."""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Iterator, ParamSpec, TypeVar

from django.db import DatabaseError
from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from arkme.kernel.errors import ArkmeError, ErrorCode
from arkme.kernel.metrics import IMAGES_REFUSED

from .models import OperationStatus, PendingOperation

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# The codes of an image refused by a bound or a check (raster.ImageRejected, the SVG checks
# and svg_render.RenderFailed, rebuilt from a task's answer with its code alone).
IMAGE_REFUSALS = frozenset({
    ErrorCode.UNSUPPORTED_FORMAT, ErrorCode.INVALID_IMAGE, ErrorCode.IMAGE_DIMENSIONS, ErrorCode.IMAGE_TOO_LARGE,
    ErrorCode.ANIMATED_IMAGE, ErrorCode.IMAGE_TOO_COMPLEX, ErrorCode.UNSAFE_SVG, ErrorCode.SVG_RENDER_FAILED,
    ErrorCode.NOT_AN_IMAGE, ErrorCode.NO_CAPTURED_IMAGES, ErrorCode.WORKSPACE_FILE_REFUSED,
})


def counts_refused_images(service: Callable[P, R]) -> Callable[P, R]:
    """Counts the image refusal a public service raises to its caller, once, by code. Counted
    here rather than where the error is made: an error built and caught inside (is this
    attachment an image?) refuses nothing."""

    @functools.wraps(service)
    def counted(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return service(*args, **kwargs)
        except ArkmeError as error:
            if error.code in IMAGE_REFUSALS:
                IMAGES_REFUSED.labels(str(error.code)).inc()
            raise

    return counted


# Ended operations stay as history; the gauge counts what a day of traffic left.
WINDOW = timedelta(days=1)


def _family() -> GaugeMetricFamily:
    return GaugeMetricFamily("arkme_gallery_operations",
                             "Gallery add operations prepared in the last 24 hours, by status.", labels=["status"])


class PendingOperationsCollector(Collector):
    def describe(self) -> Iterator[GaugeMetricFamily]:
        """Named without a query: registering must not touch the database."""
        yield _family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = _family()
        counts = dict.fromkeys(OperationStatus.values, 0)
        recent = PendingOperation.objects.filter(created_at__gte=timezone.now() - WINDOW)
        try:
            rows = list(recent.values("status").annotate(n=Count("id")).order_by())
        except DatabaseError:
            # The counters still serve while the database is away; /readyz says why.
            logger.warning("gallery operation counts unavailable: the database cannot be read")
            return
        for row in rows:
            counts[row["status"]] = row["n"]
        for status, count in counts.items():
            family.add_metric([status], count)
        yield family
