"""Staff pages: extensions with their gallery as thumbnails, history, operations, blobs.

Thumbnails are streamed from storage through an admin view (staff only); no object URL,
public or signed, is ever put in a page.
"""
from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.http import Http404, HttpResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from arkme.kernel.admin import ReadOnlyAdminMixin, related_count

from .blobs.services import blob_thumbnail
from .models import AccountImage, Blob, Extension, Gallery, GalleryHistory, GalleryItem, PendingOperation
from .services.gallery_add import operations_expire


def thumbnail(blob: Blob, size: int = 96) -> str:
    url = reverse("admin:galleries_blob_image", args=[blob.pk])
    return format_html('<img src="{}" alt="" style="max-width:{}px;max-height:{}px;border:1px solid #ccc">', url, size, size)


@admin.register(Extension)
class ExtensionAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "public_id", "gallery_size", "created_at")
    search_fields = ("name", "public_id", "owner__display_name")
    raw_id_fields = ("owner",)
    readonly_fields = ("public_id", "created_at", "gallery_revision", "gallery_preview")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("owner", "gallery").annotate(
            _items=related_count(GalleryItem, "gallery__extension"))

    @admin.display(description="images", ordering="_items")
    def gallery_size(self, obj):
        return obj._items

    @admin.display(description="gallery revision")
    def gallery_revision(self, obj):
        return obj.gallery.revision if hasattr(obj, "gallery") else "—"

    @admin.display(description="gallery")
    def gallery_preview(self, obj):
        if not hasattr(obj, "gallery"):
            return "—"
        items = obj.gallery.items.select_related("blob").order_by("position")
        if not items:
            return "empty"
        return format_html_join(" ", "{}", ((format_html("{}. {}", item.position, thumbnail(item.blob)),) for item in items))


class GalleryItemInline(admin.TabularInline):
    model = GalleryItem
    fields = ("position", "public_id", "preview", "dimensions", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("position",)

    def has_add_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("blob")

    @admin.display(description="image")
    def preview(self, obj):
        return thumbnail(obj.blob)

    @admin.display(description="size")
    def dimensions(self, obj):
        return f"{obj.blob.width}×{obj.blob.height} {obj.blob.format}, {obj.blob.size} bytes"


@admin.register(Gallery)
class GalleryAdmin(admin.ModelAdmin):
    list_display = ("extension", "revision", "updated_at")
    search_fields = ("extension__name", "extension__public_id")
    readonly_fields = ("extension", "revision", "updated_at")
    inlines = [GalleryItemInline]

    def has_add_permission(self, request):
        return False


@admin.register(GalleryHistory)
class GalleryHistoryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("gallery", "revision", "action", "created_at")
    list_filter = ("action",)
    search_fields = ("gallery__extension__name",)
    readonly_fields = ("gallery", "revision", "action", "items", "operation", "created_at")


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"
    RANGES = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}

    def lookups(self, request, model_admin):
        return [("1h", "Under an hour"), ("1d", "Under a day"), ("7d", "Under a week"), ("older", "A week or older")]

    def queryset(self, request, queryset):
        now = timezone.now()
        value = self.value()
        if value in self.RANGES:
            return queryset.filter(created_at__gte=now - self.RANGES[value])
        if self.value() == "older":
            return queryset.filter(created_at__lt=now - self.RANGES["7d"])
        return queryset


@admin.register(PendingOperation)
class PendingOperationAdmin(admin.ModelAdmin):
    list_display = ("public_id", "account", "extension", "status", "source_kind", "image_count", "created_at", "expires_at", "failure_code")
    list_filter = ("status", AgeFilter, "source_kind")
    search_fields = ("public_id", "account__display_name", "extension__name")
    # Sources hold server-side handles (paths, attachment rows): not shown, even to staff.
    fields = ("public_id", "account", "extension", "status", "source_kind", "image_count", "created_at",
              "expires_at", "ended_at", "failure_code")
    readonly_fields = fields
    actions = ["expire"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="images")
    def image_count(self, obj):
        return len(obj.sources or [])

    @admin.action(description="Expire the selected pending operations")
    def expire(self, request, queryset):
        self.message_user(request, f"Expired {operations_expire(queryset)} operation(s).")


@admin.register(Blob)
class BlobAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("short_sha", "preview", "format", "width", "height", "size", "references", "created_at")
    list_filter = ("format",)
    search_fields = ("sha256",)
    readonly_fields = ("sha256", "preview", "format", "width", "height", "size", "references", "created_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_items=related_count(GalleryItem, "blob"),
                                                      _images=related_count(AccountImage, "blob"))

    @admin.display(description="sha256")
    def short_sha(self, obj):
        return obj.sha256[:16] + "…"

    @admin.display(description="image")
    def preview(self, obj):
        return thumbnail(obj, 64)

    @admin.display(description="references")
    def references(self, obj):
        return f"{obj._items} gallery item(s), {obj._images} account image(s)"

    def get_urls(self):
        return [
            path("<int:pk>/image/", self.admin_site.admin_view(self.image_view), name="galleries_blob_image"),
            *super().get_urls(),
        ]

    def image_view(self, request, pk: int):
        """The blob's thumbnail, made once and cached in storage: a page of thumbnails never
        streams the originals."""
        sha = Blob.objects.filter(pk=pk).values_list("sha256", flat=True).first()
        if sha is None:
            raise Http404
        try:
            data = blob_thumbnail(sha)
        except FileNotFoundError as exc:
            raise Http404 from exc
        response = HttpResponse(data, content_type="image/png")
        response["Cache-Control"] = "private, max-age=3600"
        response["X-Content-Type-Options"] = "nosniff"
        return response


@admin.register(AccountImage)
class AccountImageAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "preview", "public_id", "created_at")
    search_fields = ("name", "owner__display_name", "public_id")
    raw_id_fields = ("owner", "blob")
    readonly_fields = ("public_id", "preview", "created_at")

    @admin.display(description="image")
    def preview(self, obj):
        return thumbnail(obj.blob, 64) if obj.blob_id else "—"
