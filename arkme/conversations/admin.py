"""Staff pages for DSH clients and agent sessions with their messages. Keys are never shown."""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse

from arkme.kernel.admin import RECENT_ROWS, EstimatedCountPaginator, ReadOnlyAdminMixin, recent_rows

from .clients import dsh_client_create, dsh_clients_revoke
from .models import AgentSession, DshClient, Message


@admin.register(DshClient)
class DshClientAdmin(admin.ModelAdmin):
    list_display = ("name", "key_prefix", "profiles", "created_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "key_prefix")
    readonly_fields = ("key_prefix", "created_at", "revoked_at")
    fields = ("name", "profiles", "key_prefix", "created_at", "revoked_at")
    actions = ["revoke"]

    def save_model(self, request: HttpRequest, obj: DshClient, form: ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # A new client gets its key here, shown once, like `arkme_dsh_client create`.
        client, key = dsh_client_create(name=obj.name, profiles=obj.profiles or [])
        obj.pk, obj.key_prefix, obj.key_hash = client.pk, client.key_prefix, client.key_hash
        obj.created_at = client.created_at
        self.message_user(request, f"The key of {client.name}, shown only now: {key}", messages.WARNING)

    @admin.action(description="Revoke the selected clients' keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[DshClient]) -> None:
        self.message_user(request, f"Revoked {dsh_clients_revoke(queryset)} client key(s).")


@admin.register(Message)
class MessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("session", "message_id", "text", "recorded_at")
    list_select_related = ("session",)
    search_fields = ("session__public_id", "message_id")
    paginator = EstimatedCountPaginator
    show_full_result_count = False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("public_id", "client", "account", "profile", "attachments_mounted", "created_at",
                    "last_seen_at", "closed_at")
    list_filter = ("profile", "attachments_mounted", "client", ("closed_at", admin.EmptyFieldListFilter))
    search_fields = ("public_id", "account__display_name", "account__public_id")
    readonly_fields = ("latest_messages",)
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    @admin.display(description="latest messages")
    def latest_messages(self, obj: AgentSession) -> str:
        rows = obj.messages.order_by("-id")[:RECENT_ROWS]
        return recent_rows([(m.message_id, m.text, m.recorded_at) for m in rows], ("id", "text", "recorded"),
                           more_url=reverse("admin:conversations_message_changelist") + f"?session__id__exact={obj.pk}",
                           more_label="All messages of this session")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related("client", "account")
