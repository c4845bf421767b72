"""Staff pages for approvals, idempotency records and the call audit. Secrets are never shown."""
from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from arkme.kernel.admin import ReadOnlyAdminMixin

from .models import ApprovalGrant, IdempotencyRecord, ToolCall


@admin.register(ApprovalGrant)
class ApprovalGrantAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("session", "tool_name", "created_at", "expires_at", "used_at")
    list_filter = ("tool_name", ("used_at", admin.EmptyFieldListFilter))
    exclude = ("token_hash", "arguments_digest")


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "session_public_id", "tool_name", "tool_id", "outcome", "http_status",
                    "duration_ms", "replayed")
    list_filter = ("tool_name", "outcome", "http_status", "replayed")
    search_fields = ("session_public_id", "tool_name", "outcome")
    date_hierarchy = "created_at"

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # append-only: retention is `arkme_audit prune`


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("key", "client", "session", "tool_name", "status", "response_status", "created_at")
    list_filter = ("status", "tool_name")
    exclude = ("response_body", "request_digest")
