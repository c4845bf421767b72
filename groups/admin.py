from django.contrib import admin

from .models import Group, Membership, PrivateChat


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


@admin.register(PrivateChat)
class PrivateChatAdmin(admin.ModelAdmin):
    list_display = ("public_id", "account_low", "account_high", "last_activity_at")
    search_fields = ("public_id", "account_low__display_name", "account_high__display_name")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
