"""The galleries' gauges, read from the database when Prometheus scrapes."""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Iterator

from django.db import DatabaseError
from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .models import OperationStatus, PendingOperation

logger = logging.getLogger(__name__)

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
