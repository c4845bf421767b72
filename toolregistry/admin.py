"""Staff pages for clients, sessions, approvals and the call audit. Secrets are never shown."""
from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone

from .clients import dsh_client_create
from .models import AgentSession, ApprovalGrant, DshClient, IdempotencyRecord, Message, ToolCall


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DshClient)
class DshClientAdmin(admin.ModelAdmin):
    list_display = ("name", "key_prefix", "profiles", "created_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "key_prefix")
    readonly_fields = ("key_prefix", "created_at", "revoked_at")
    fields = ("name", "profiles", "key_prefix", "created_at", "revoked_at")
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        # A new client gets its key here, shown once, like `arkme_dsh_client create`.
        client, key = dsh_client_create(name=obj.name, profiles=obj.profiles or [])
        obj.pk, obj.key_prefix, obj.key_hash = client.pk, client.key_prefix, client.key_hash
        obj.created_at = client.created_at
        self.message_user(request, f"The key of {client.name}, shown only now: {key}", messages.WARNING)

    @admin.action(description="Revoke the selected clients' keys")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} client key(s).")


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("message_id", "text", "recorded_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "client", "account", "profile", "attachments_mounted", "created_at", "last_seen_at", "closed_at")
    list_filter = ("profile", "attachments_mounted", "client", ("closed_at", admin.EmptyFieldListFilter))
    search_fields = ("public_id", "account__display_name", "account__public_id")
    inlines = [MessageInline]


@admin.register(ApprovalGrant)
class ApprovalGrantAdmin(ReadOnlyAdmin):
    list_display = ("session", "tool_name", "created_at", "expires_at", "used_at")
    list_filter = ("tool_name", ("used_at", admin.EmptyFieldListFilter))
    exclude = ("token_hash", "arguments_digest")


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "session", "tool_name", "tool_id", "outcome", "http_status", "duration_ms", "replayed")
    list_filter = ("tool_name", "outcome", "http_status", "replayed")
    search_fields = ("session__public_id", "tool_name", "outcome")
    date_hierarchy = "created_at"


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ("key", "client", "session", "tool_name", "status", "response_status", "created_at")
    list_filter = ("status", "tool_name")
    exclude = ("response_body", "request_digest")
