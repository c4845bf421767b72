"""The registry's state: approvals, idempotency records and the audit of tool calls."""
from __future__ import annotations

from django.db import models


class ApprovalGrant(models.Model):
    """A human's approval of one call: single use, expiring, bound to session, tool and arguments."""

    session = models.ForeignKey("conversations.AgentSession", on_delete=models.CASCADE, related_name="approvals")
    tool_name = models.CharField(max_length=64)
    arguments_digest = models.CharField(max_length=64)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]


class IdempotencyStatus(models.TextChoices):
    IN_PROGRESS = "in_progress", "In progress"
    COMPLETE = "complete", "Complete"


class IdempotencyRecord(models.Model):
    client = models.ForeignKey("conversations.DshClient", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey("conversations.AgentSession", on_delete=models.CASCADE, related_name="+")
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


class Surface(models.TextChoices):
    REST = "rest", "REST"
    MCP = "mcp", "MCP"


class ToolCall(models.Model):
    """The audit of one execute call: what ran and how it ended, never its arguments.

    Append-only: deleting a session (or its account) keeps the row, which still names the
    session by its public id; only the retention command (``arkme_audit prune``) removes rows.
    """

    session = models.ForeignKey("conversations.AgentSession", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="tool_calls")
    session_public_id = models.CharField(max_length=40, blank=True, default="", db_index=True)
    tool_name = models.CharField(max_length=64)
    tool_id = models.CharField(max_length=80, blank=True, default="")
    outcome = models.CharField(max_length=64, help_text="ok, or the error code.")
    http_status = models.PositiveSmallIntegerField()
    duration_ms = models.PositiveIntegerField()
    replayed = models.BooleanField(default=False)
    surface = models.CharField(max_length=8, choices=Surface.choices, default=Surface.REST,
                               help_text="The door the call came through: the REST API or the MCP endpoint.")
    request_id = models.CharField(max_length=64, blank=True, default="", db_index=True,
                                  help_text="The HTTP request's X-Request-ID, also on its log lines.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        # The staff list pages the audit newest first under each of its filters; each filter
        # reads its own index in that order, so a page and its capped count cost the same at
        # ten thousand calls or ten million.
        indexes = [
            models.Index(fields=["tool_name", "-id"], name="tool_call_by_tool"),
            models.Index(fields=["outcome", "-id"], name="tool_call_by_outcome"),
            models.Index(fields=["surface", "-id"], name="tool_call_by_surface"),
            models.Index(fields=["-id"], condition=models.Q(http_status__gte=400), name="tool_call_errors"),
            models.Index(fields=["-id"], condition=models.Q(http_status__gte=500), name="tool_call_failures"),
            models.Index(fields=["-id"], condition=models.Q(replayed=True), name="tool_call_replays"),
        ]




class ToolCallHour(models.Model):
    """Tool calls rolled up by hour, tool, outcome and surface, so the staff dashboard reads a
    few hundred rows a day whatever the audit holds. Rebuilt from the audit for the hours that
    changed (``tool_calls_roll_up``, a periodic task)."""

    hour = models.DateTimeField()
    tool_name = models.CharField(max_length=64)
    outcome = models.CharField(max_length=64)
    surface = models.CharField(max_length=8, choices=Surface.choices)
    calls = models.PositiveIntegerField()
    errors = models.PositiveIntegerField(help_text="Calls answered 4xx or 5xx.")
    latency_buckets = models.JSONField(help_text="Calls per latency bucket (LATENCY_BOUNDS_MS, then the rest).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hour", "tool_name", "outcome", "surface"],
                                               name="tool_call_hour_once")]
        indexes = [models.Index(fields=["hour"])]
