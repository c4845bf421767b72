"""Staff pages for the approval record and standing grants: read-only, but for revoking a
grant (an action, recorded as ``revoked`` via staff)."""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from arkme.kernel.admin import RECENT_ROWS, EstimatedCountPaginator, ReadOnlyAdminMixin, recent_rows

from .models import ApprovalDecision, ApprovalVia, StandingGrant, ToolCall
from .standing_grants import standing_grant_revoke


class _ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class DecisionInline(_ReadOnlyInline):
    """The decisions linked to a call (its ``used``) or to an approval (its whole history)."""

    model = ApprovalDecision
    fields = ("created_at", "decision", "via", "tool_name", "approval", "standing_grant")
    readonly_fields = fields
    ordering = ("id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApprovalDecision]:
        return super().get_queryset(request).select_related("approval", "standing_grant")


class CallDecisionInline(DecisionInline):
    fk_name = "tool_call"
    verbose_name_plural = "approval decisions linked to this call"


class ApprovalDecisionInline(DecisionInline):
    fk_name = "approval"
    verbose_name_plural = "approval history"


def approval_history(call: ToolCall) -> str:
    """What happened to the approval a call used (or the standing grant that covered it), in order."""
    links = Q()
    if call.approval_id is not None:
        links |= Q(approval_id=call.approval_id)
    if call.standing_grant_id is not None:
        links |= Q(standing_grant_id=call.standing_grant_id)
    if not links:
        return "—"
    rows = ApprovalDecision.objects.filter(links).order_by("id")[:RECENT_ROWS]
    return recent_rows([(row.created_at, row.decision, row.get_via_display(), row.tool_call_id or "—") for row in rows],
                       ("when", "decision", "where", "call"),
                       more_url=reverse("admin:toolregistry_approvaldecision_changelist") + "?" + (
                           f"approval__id__exact={call.approval_id}" if call.approval_id
                           else f"standing_grant__id__exact={call.standing_grant_id}"),
                       more_label="The whole record")


def _link(view: str, pk: int | None) -> str:
    """A link to a related row by its id, read from this row: no statement per row."""
    if pk is None:
        return "—"
    return format_html('<a href="{}">{}</a>', reverse(view, args=[pk]), pk)


def _state(grant: StandingGrant, now: Any) -> str:
    if grant.revoked_at is not None:
        return f"revoked ({grant.revoked_via})"
    if grant.session.closed_at is not None:
        return "ended with its session"
    return "expired" if grant.expires_at <= now else "live"


@admin.register(StandingGrant)
class StandingGrantAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "tool_name", "target", "account", "session", "expires_at", "state")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    list_select_related = ("session__account",)
    search_fields = ("=session__public_id", "=target")
    actions = ["revoke"]

    @admin.display(description="account")
    def account(self, grant: StandingGrant) -> str:
        return grant.session.account.display_name

    @admin.display(description="state")
    def state(self, grant: StandingGrant) -> str:
        return _state(grant, timezone.now())

    @admin.action(description="Revoke the selected standing grants", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[StandingGrant]) -> None:
        revoked = sum(standing_grant_revoke(grant, via=ApprovalVia.STAFF)
                      for grant in queryset.filter(revoked_at__isnull=True).select_related("session"))
        self.message_user(request, f"Revoked {revoked} standing grant(s).", messages.SUCCESS)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        """Revoking is the one change staff make here: those who may change grants (the
        change form itself stays read-only, ReadOnlyAdminMixin)."""
        return bool(request.user.has_perm("toolregistry.change_standinggrant"))


@admin.register(ApprovalDecision)
class ApprovalDecisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "decision", "via", "tool_name", "session_public_id", "approval_row", "grant_row",
                    "call")
    # Choices known without reading the table (a tool-name filter would scan it for its values).
    list_filter = ("decision", "via")
    search_fields = ("=session_public_id",)
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    @admin.display(description="approval")
    def approval_row(self, decision: ApprovalDecision) -> str:
        return _link("admin:toolregistry_approvalgrant_change", decision.approval_id)

    @admin.display(description="standing grant")
    def grant_row(self, decision: ApprovalDecision) -> str:
        return _link("admin:toolregistry_standinggrant_change", decision.standing_grant_id)

    @admin.display(description="call")
    def call(self, decision: ApprovalDecision) -> str:
        return _link("admin:toolregistry_toolcall_change", decision.tool_call_id)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # append-only: retention is `arkme_audit prune`
