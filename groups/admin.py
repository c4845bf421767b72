"""Staff pages: groups with members, private chats (read-only), invitations, join requests."""
from __future__ import annotations

import re

from django.contrib import admin, messages

from arkme.kernel.admin import ReadOnlyAdminMixin
from arkme.kernel.errors import ArkmeError

from .models import ChatMessage, Group, Invitation, JoinRequest, JoinRequestStatus, Membership, PrivateChat
from .services import join_request_decide


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ("account",)
    extra = 0


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ("name", "join_policy", "public_id", "created_at")
    list_filter = ("join_policy",)
    search_fields = ("name", "public_id")
    readonly_fields = ("public_id", "created_at")
    inlines = [MembershipInline]


INVITATION_LINK = re.compile(r"\S+/groups/join/\S+")


class ChatMessageInline(admin.TabularInline):
    model = ChatMessage
    fields = ("sender", "shown_text", "created_at", "delivered_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="text")
    def shown_text(self, obj):
        # An invitation link is the invitee's alone; staff see that one was sent.
        return INVITATION_LINK.sub("[invitation link]", obj.text)


@admin.register(PrivateChat)
class PrivateChatAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("public_id", "account_low", "account_high", "last_activity_at")
    search_fields = ("public_id", "account_low__display_name", "account_high__display_name")
    inlines = [ChatMessageInline]

    def has_view_permission(self, request, obj=None):
        return request.user.is_staff


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("group", "invitee", "inviter", "status", "created_at", "expires_at", "used_at")
    list_filter = ("status", "group")
    search_fields = ("group__name", "invitee__display_name")
    # The token is never shown: only its hash is stored, and that is not shown either.
    fields = ("group", "invitee", "inviter", "status", "created_at", "expires_at", "used_at")
    readonly_fields = fields


@admin.register(JoinRequest)
class JoinRequestAdmin(admin.ModelAdmin):
    list_display = ("account", "group", "status", "created_at", "decided_at", "decided_by")
    list_filter = ("status", "group")
    search_fields = ("account__display_name", "group__name")
    readonly_fields = ("group", "account", "invitation", "status", "created_at", "decided_at", "decided_by")
    actions = ["approve", "decline"]

    def has_add_permission(self, request):
        return False

    def _decide(self, request, queryset, approve: bool) -> None:
        done = 0
        for join_request in queryset.filter(status=JoinRequestStatus.PENDING):
            try:
                join_request_decide(request_id=join_request.pk, approve=approve, by=request.user.get_username())
                done += 1
            except ArkmeError as error:
                self.message_user(request, error.message, messages.WARNING)
        self.message_user(request, f"{'Approved' if approve else 'Declined'} {done} request(s).")

    @admin.action(description="Approve the selected join requests")
    def approve(self, request, queryset):
        self._decide(request, queryset, True)

    @admin.action(description="Decline the selected join requests")
    def decline(self, request, queryset):
        self._decide(request, queryset, False)
