from django.contrib import admin

from .models import Blob, Extension, Gallery, GalleryItem


@admin.register(Extension)
class ExtensionAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "public_id", "created_at")
    search_fields = ("name", "public_id", "owner__display_name")
    raw_id_fields = ("owner",)
    readonly_fields = ("public_id", "created_at")


@admin.register(Gallery)
class GalleryAdmin(admin.ModelAdmin):
    list_display = ("extension", "revision", "updated_at")
    readonly_fields = ("extension", "revision", "updated_at")


@admin.register(Blob)
class BlobAdmin(admin.ModelAdmin):
    list_display = ("sha256", "format", "width", "height", "size", "created_at")
    readonly_fields = ("sha256", "format", "width", "height", "size", "created_at")


admin.site.register(GalleryItem)
