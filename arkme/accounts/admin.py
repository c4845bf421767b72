"""Staff pages for accounts."""
from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.models import Group as AuthGroup

from .models import Account


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("display_name", "arkme_id", "public_id", "is_active", "arkme_id_changed_at", "created_at")
    list_filter = ("is_active",)
    search_fields = ("display_name", "arkme_id", "public_id")
    readonly_fields = ("public_id", "created_at", "arkme_id_changed_at")
    raw_id_fields = ("user",)


# Staff are superusers; Django's permission groups are not used, and their "Groups" entry
# sat on the index beside Arkme's own groups under the same name.
admin.site.unregister(AuthGroup)
