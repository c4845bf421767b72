"""Extensions and their preview galleries, over content-addressed blobs."""
from __future__ import annotations

from django.db import models

from arkme.ids import new_extension_id, new_item_id
from arkme.models import Account


class Extension(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_extension_id, editable=False)
    owner = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="extensions")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class Gallery(models.Model):
    """The preview gallery of one extension; ``revision`` rises by one on every change."""

    extension = models.OneToOneField(Extension, on_delete=models.CASCADE, related_name="gallery")
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "galleries"

    def __str__(self) -> str:
        return f"Gallery of {self.extension}"


class Blob(models.Model):
    """A stored image, addressed by the sha256 of its stored bytes."""

    sha256 = models.CharField(max_length=64, unique=True)
    size = models.PositiveIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    format = models.CharField(max_length=10)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.sha256[:12]}… {self.width}×{self.height} {self.format}"

    @property
    def storage_key(self) -> str:
        return f"blobs/{self.sha256[:2]}/{self.sha256}"


class GalleryItem(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_item_id, editable=False)
    gallery = models.ForeignKey(Gallery, on_delete=models.CASCADE, related_name="items")
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="gallery_items")
    position = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["gallery_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["gallery", "blob"], name="gallery_item_content_once"),
            # Reorder and delete renumber in two steps, so this holds after every statement.
            models.UniqueConstraint(fields=["gallery", "position"], name="gallery_item_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} at {self.position}"
