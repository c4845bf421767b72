"""Staff pages for approvals, idempotency records and the call audit. Secrets are never shown."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from arkme.kernel.admin import EstimatedCountPaginator, ReadOnlyAdminMixin
from arkme.kernel.errors import ErrorCode

from . import admin_page_tools  # noqa: F401 - the DSH client page with its approval-page tools
from .approvals_admin import ApprovalDecisionInline, CallDecisionInline, approval_history
from .audit import IN_PROGRESS, INTERRUPTED, INTERRUPTED_AFTER, OK, outcome_seen
from .catalog import CATALOG
from .models import ApprovalGrant, IdempotencyRecord, ToolCall

_TOOL_NAMES = frozenset(module.METADATA.name for module in CATALOG.modules)
_OUTCOMES = frozenset({OK, IN_PROGRESS, *ErrorCode})

@admin.register(ApprovalGrant)
class ApprovalGrantAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("session", "tool_name", "created_at", "expires_at", "used_at")
    list_filter = ("tool_name", ("used_at", admin.EmptyFieldListFilter))
    exclude = ("token_hash", "arguments_digest", "page_handle_hash")
    inlines = [ApprovalDecisionInline]


class _FixedChoiceFilter(admin.SimpleListFilter):
    """Choices known without reading the table: the audit can hold millions of rows, and a
    field filter would scan them all for their distinct values on every page."""

    options: tuple[tuple[str, str], ...] = ()

    def lookups(self, request: HttpRequest, model_admin: Any) -> tuple[tuple[str, str], ...]:
        return self.options


class ToolFilter(_FixedChoiceFilter):
    title = "tool"
    parameter_name = "tool"
    options = tuple((module.METADATA.name, module.METADATA.name) for module in CATALOG.modules)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(tool_name=self.value()) if self.value() else queryset


class OutcomeFilter(_FixedChoiceFilter):
    title = "outcome"
    parameter_name = "outcome"
    options = (("ok", "ok"), ("errors", "errors only"), ("refused", "refused (4xx)"),
               ("failed", "failed (5xx)"), (INTERRUPTED, "interrupted (no answer)"))

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "ok":
            # By outcome, not status: a write's row has no status until its call answers.
            return queryset.filter(outcome=OK)
        if value == INTERRUPTED:
            return queryset.filter(outcome=IN_PROGRESS, created_at__lt=timezone.now() - INTERRUPTED_AFTER)
        if value == "errors":
            return queryset.filter(http_status__gte=400)
        if value == "refused":
            return queryset.filter(http_status__gte=400, http_status__lt=500)
        if value == "failed":
            return queryset.filter(http_status__gte=500)
        return queryset


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    # Narrow columns, so the list reads without scrolling sideways at 1400 px (a browser test).
    list_display = ("created_at", "tool_name", "result", "duration", "surface", "account", "client", "request")
    list_filter = (ToolFilter, OutcomeFilter, "surface", "replayed")
    search_fields = ("=session_public_id", "=tool_name", "=outcome", "=request_id")
    search_help_text = "A session id, a request id, a tool's name, or an outcome (ok or an error code)."
    list_select_related = ("session__account", "session__client")
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    inlines = [CallDecisionInline]
    readonly_fields = ("approval_history",)

    @admin.display(description="approval history")
    def approval_history(self, call: ToolCall) -> str:
        return approval_history(call)

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Any],
                           search_term: str) -> tuple[QuerySet[Any], bool]:
        """The search fields' exact matches, but one field per term: an OR over the four
        would leave no index to read newest first, and searching ``ok`` would sort millions
        of rows. A tool's name and an outcome are told apart by their vocabularies."""
        term = search_term.strip()
        if not term:
            return queryset, False
        if term in _TOOL_NAMES:
            return queryset.filter(tool_name=term), False
        if term in _OUTCOMES:
            return queryset.filter(outcome=term), False
        return queryset.filter(Q(session_public_id=term) | Q(request_id=term)), False

    @admin.display(description="outcome", ordering="outcome")
    def result(self, call: ToolCall) -> str:
        replay = " (replayed)" if call.replayed else ""
        if call.outcome == IN_PROGRESS:  # not answered (yet): no status
            return outcome_seen(call.outcome, call.created_at, timezone.now())
        return f"{call.outcome} · {call.http_status}{replay}"

    @admin.display(description="duration", ordering="duration_ms")
    def duration(self, call: ToolCall) -> str:
        return f"{call.duration_ms} ms"

    @admin.display(description="account")
    def account(self, call: ToolCall) -> str:
        return call.session.account.display_name if call.session else "—"

    @admin.display(description="client")
    def client(self, call: ToolCall) -> str:
        return call.session.client.name if call.session else "—"

    @admin.display(description="request")
    def request(self, call: ToolCall) -> str:
        return call.request_id[:12] or "—"

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # append-only: retention is `arkme_audit prune`


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("key", "client", "session", "tool_name", "status", "response_status", "created_at")
    list_filter = ("status", "tool_name")
    exclude = ("response_body", "request_digest")
