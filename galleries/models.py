"""Extensions and their preview galleries, over content-addressed blobs."""
from __future__ import annotations

from django.db import models

from arkme.accounts.models import Account
from arkme.kernel.ids import new_account_image_id, new_extension_id, new_item_id, new_operation_id


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


class AccountImage(models.Model):
    """An image in an account's own library; handed to the model as a signed ``image_ref``."""

    public_id = models.CharField(max_length=40, unique=True, default=new_account_image_id, editable=False)
    owner = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="images")
    name = models.CharField(max_length=100)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="account_images")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} of {self.owner}"


class GalleryHistory(models.Model):
    """One row per successful gallery change; its revision is the gallery's after the change."""

    class Action(models.TextChoices):
        ADD = "add", "Add"
        DELETE = "delete", "Delete"
        REORDER = "reorder", "Reorder"

    gallery = models.ForeignKey(Gallery, on_delete=models.CASCADE, related_name="history")
    revision = models.PositiveIntegerField()
    action = models.CharField(max_length=10, choices=Action.choices)
    items = models.JSONField(default=list, help_text="Item public ids the change touched, in order.")
    operation = models.ForeignKey("PendingOperation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["gallery_id", "revision"]
        verbose_name_plural = "gallery history"
        constraints = [
            models.UniqueConstraint(fields=["gallery", "revision"], name="gallery_history_revision_once"),
        ]


class OperationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    CONFIRMED = "confirmed", "Confirmed"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"
    EXPIRED = "expired", "Expired"


class PendingOperation(models.Model):
    """A prepared gallery add, waiting for the human's 确认 in the conversation."""

    public_id = models.CharField(max_length=40, unique=True, default=new_operation_id, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="gallery_operations")
    extension = models.ForeignKey(Extension, on_delete=models.CASCADE, related_name="operations")
    session = models.ForeignKey("conversations.AgentSession", null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=OperationStatus.choices, default=OperationStatus.PENDING)
    source_kind = models.CharField(max_length=20)
    request_digest = models.CharField(max_length=64, help_text="What was asked for; the same prepare again gets this operation.")
    sources = models.JSONField(help_text="Server-side source handles and fingerprints, in order. Never shown to the model.")
    after_message = models.BigIntegerField(default=0, help_text="Confirmation must come in a message recorded after this one.")
    # The human's answer to this operation's own question (an MCP form), which confirms this
    # operation and no other: a 确认 in the conversation confirms whatever is pending.
    reply = models.TextField(blank=True, default="", help_text="The human's reply to this operation's question, when asked directly.")
    replied_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    expires_at = models.DateTimeField(db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "extension"], condition=models.Q(status="pending"),
                name="one_pending_add_per_account_extension",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.status})"
