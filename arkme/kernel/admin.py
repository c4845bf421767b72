"""What every app's staff pages share."""
from __future__ import annotations

from typing import Any, Sequence

from django.core.paginator import Paginator
from django.db.models import F, Func, IntegerField, Model, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join


class ReadOnlyAdminMixin:
    """A record staff may look at but not create or edit here (services own the writes)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# How many related rows a change page shows; the rest are one click away in their own list.
RECENT_ROWS = 50


def recent_rows(rows: Sequence[Sequence[object]], headers: Sequence[str], *, more_url: str, more_label: str) -> str:
    """A small read-only table of the most recent related rows and a link to all of them:
    a change page that stays one statement and one page long however many rows there are."""
    head = format_html_join("", "<th>{}</th>", ((header,) for header in headers))
    body = format_html_join("", "<tr>{}</tr>", (
        (format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows))
    table = format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body) if rows else "—"
    return format_html('{}<p><a href="{}">{}</a></p>', table, more_url, more_label)


class EstimatedCountPaginator(Paginator):
    """Counts at most ``CAP`` rows (a bounded subquery), so a list of millions of rows costs
    no full count; past the cap the last pages are reached by filtering instead."""

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        rows: Any = self.object_list  # a queryset: sliced, it counts in a bounded subquery
        return int(rows[: self.CAP].count())


def related_count(model: type[Model], field: str) -> Coalesce:
    """A correlated COUNT of ``model`` rows whose ``field`` is the outer row: evaluated for the
    rows of one page, not a GROUP BY over the whole table."""
    rows = model._default_manager.filter(**{field: OuterRef("pk")}).order_by().values(field)
    return Coalesce(Subquery(rows.annotate(n=Func(F("pk"), function="COUNT")).values("n"),
                             output_field=IntegerField()), 0)
