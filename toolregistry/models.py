"""The registry's state: DSH clients, agent sessions, messages, approvals, idempotency, audit."""
from __future__ import annotations

from django.db import models

from arkme.ids import new_session_id
from arkme.models import Account


class DshClient(models.Model):
    """An agent host allowed to call the DSH API. Only a hash of its key is stored."""

    name = models.CharField(max_length=100, unique=True)
    key_prefix = models.CharField(max_length=12, help_text="The key's first characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    profiles = models.JSONField(
        default=list, blank=True,
        help_text="Profiles this client may open sessions in; empty means every profile.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "DSH client"

    def __str__(self) -> str:
        return self.name

    # DRF treats the authenticated client as ``request.user``.
    is_authenticated = True
    is_anonymous = False

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def may_use_profile(self, profile: str) -> bool:
        return not self.profiles or profile in self.profiles


class AgentSession(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_session_id, editable=False)
    client = models.ForeignKey(DshClient, on_delete=models.CASCADE, related_name="sessions")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="agent_sessions")
    profile = models.CharField(max_length=20)
    workspace = models.CharField(max_length=64, blank=True, default="")
    attachments_mounted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now_add=True, db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.public_id


class Message(models.Model):
    """A direct message the signed-in human sent, as DSH recorded it."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="messages")
    message_id = models.CharField(max_length=128)
    text = models.TextField(blank=True, default="")
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "message_id"], name="message_id_once_per_session"),
        ]

    def __str__(self) -> str:
        return f"{self.session} #{self.message_id}"


class CapturedAttachment(models.Model):
    """A file attached to a message, kept in storage until its session ends."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    index = models.PositiveIntegerField(help_text="1-based, in the message's order.")
    storage_key = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    content_type = models.CharField(max_length=100, blank=True, default="")

    class Meta:
        ordering = ["message_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["message", "index"], name="attachment_index_once"),
        ]


class ApprovalGrant(models.Model):
    """A human's approval of one call: single use, expiring, bound to session, tool and arguments."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="approvals")
    tool_name = models.CharField(max_length=64)
    arguments_digest = models.CharField(max_length=64)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]


class IdempotencyStatus(models.TextChoices):
    IN_PROGRESS = "in_progress", "In progress"
    COMPLETE = "complete", "Complete"


class IdempotencyRecord(models.Model):
    client = models.ForeignKey(DshClient, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=64)
    request_digest = models.CharField(max_length=64)
    status = models.CharField(max_length=20, choices=IdempotencyStatus.choices, default=IdempotencyStatus.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["client", "session", "key"], name="idempotency_key_once"),
        ]


class ToolCall(models.Model):
    """The audit of one execute call: what ran and how it ended, never its arguments."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="tool_calls")
    tool_name = models.CharField(max_length=64)
    tool_id = models.CharField(max_length=80, blank=True, default="")
    outcome = models.CharField(max_length=64, help_text="ok, or the error code.")
    http_status = models.PositiveSmallIntegerField()
    duration_ms = models.PositiveIntegerField()
    replayed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
