"""Staff pages: groups with members, private chats (read-only), invitations, join requests."""
from __future__ import annotations

import re

from django.contrib import admin, messages
from django.urls import reverse

from arkme.kernel.admin import RECENT_ROWS, EstimatedCountPaginator, ReadOnlyAdminMixin, recent_rows
from arkme.kernel.errors import ArkmeError

from .models import ChatMessage, Group, Invitation, JoinRequest, JoinRequestStatus, Membership, PrivateChat
from .services import join_request_decide


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ("name", "join_policy", "member_count", "public_id", "created_at")
    list_filter = ("join_policy",)
    search_fields = ("name", "public_id")
    readonly_fields = ("public_id", "created_at", "member_count", "members")

    @admin.display(description="members")
    def members(self, obj: Group) -> str:
        if obj.pk is None:
            return "—"
        rows = obj.memberships.select_related("account").order_by("-id")[:RECENT_ROWS]
        return recent_rows([(m.account.display_name, m.get_role_display(), m.joined_at) for m in rows],
                           ("person", "role", "joined"),
                           more_url=reverse("admin:groups_membership_changelist") + f"?group__id__exact={obj.pk}",
                           more_label="All members, to add, change or remove")


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("account", "group", "role", "joined_at")
    list_filter = ("role",)
    list_select_related = ("account", "group")
    search_fields = ("account__display_name", "group__name")
    raw_id_fields = ("account", "group")
    paginator = EstimatedCountPaginator
    show_full_result_count = False


INVITATION_LINK = re.compile(r"\S+/groups/join/\S+")


def redacted(text: str) -> str:
    # An invitation link is the invitee's alone; staff see that one was sent.
    return INVITATION_LINK.sub("[invitation link]", text)


@admin.register(ChatMessage)
class ChatMessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("chat", "sender", "shown_text", "created_at", "delivered_at")
    list_select_related = ("chat", "sender", "chat__account_low", "chat__account_high")
    fields = ("chat", "sender", "shown_text", "created_at", "delivered_at")
    readonly_fields = fields
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    @admin.display(description="text")
    def shown_text(self, obj: ChatMessage) -> str:
        return redacted(obj.text)


@admin.register(PrivateChat)
class PrivateChatAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("public_id", "account_low", "account_high", "last_activity_at")
    search_fields = ("public_id", "account_low__display_name", "account_high__display_name")
    list_select_related = ("account_low", "account_high")
    readonly_fields = ("public_id", "account_low", "account_high", "last_activity_at", "latest_messages")

    @admin.display(description="latest messages")
    def latest_messages(self, obj: PrivateChat) -> str:
        rows = obj.messages.select_related("sender").order_by("-id")[:RECENT_ROWS]
        return recent_rows([(m.sender.display_name, redacted(m.text), m.created_at, m.delivered_at or "—")
                            for m in rows], ("from", "text", "sent", "delivered"),
                           more_url=reverse("admin:groups_chatmessage_changelist") + f"?chat__id__exact={obj.pk}",
                           more_label="All messages of this chat")

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
