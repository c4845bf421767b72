"""The conversation with DSH: its clients, agent sessions, the human's messages and the files
attached to them."""
from __future__ import annotations

from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.db import models

from arkme.accounts.models import Account
from arkme.kernel.ids import new_session_id


def validate_printable(value: str) -> None:
    """A name an operator reads in lists and logs: no tabs, line breaks or control characters."""
    if not value.isprintable():
        raise ValidationError("Use printable characters only: no tabs, line breaks or control characters.")


class DshClient(models.Model):
    """An agent host allowed to call the DSH API. Only a hash of its key is stored."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_printable])
    key_prefix = models.CharField(max_length=12, help_text="The key's first characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    profiles = models.JSONField(
        default=list, blank=True,
        help_text="Profiles this client may open sessions in; empty means every profile.",
    )
    approval_page_tools = models.JSONField(
        default=list, blank=True,
        help_text="Tools whose approvals this client's sessions take on Arkme's approval page "
                  "(tool names, or \"*\" for every tool), besides ARKME_APPROVAL_PAGE_TOOLS.",
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
    # Not indexed: a read refreshes it (at most once a minute), and on PostgreSQL an update
    # that changes no indexed column is heap-only, writing no index entry. The purge finds
    # idle sessions through the open ones instead (``session_open_by_id``).
    last_seen_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["id"], condition=models.Q(closed_at__isnull=True), name="session_open_by_id"),
        ]

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


class SessionKey(NamedTuple):
    """What the domains need of the acting session, already checked by the session look-up."""

    pk: int
    public_id: str
    workspace: str
