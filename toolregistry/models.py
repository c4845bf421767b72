"""The registry's state: approvals, idempotency records and the audit of tool calls."""
from __future__ import annotations

from django.db import models


class ApprovalVia(models.TextChoices):
    """Where a human's answer was heard."""

    HOST = "host", "The host (DSH's card)"
    PAGE = "page", "Arkme's approval page"
    MCP_FORM = "mcp_form", "An MCP form elicitation"
    MCP_URL = "mcp_url", "An MCP URL elicitation to the page"
    STAFF = "staff", "Staff, in the admin"
    ACCOUNT = "account", "The account, on its page of standing grants"
    SYSTEM = "system", "The registry itself (expiry, session close)"


class ApprovalScope(models.TextChoices):
    ONCE = "once", "This call only"
    SESSION = "session", "Later calls on the same target in this session"


class ApprovalGrant(models.Model):
    """A human's approval of one call: single use, expiring, bound to session, tool and arguments.

    An approval taken on Arkme's page (``page_handle_hash`` set) stays pending until the
    session's own account approves or declines it there; any other approval counts as given
    when it is issued (the host showed the card) or, for MCP's sealed answers, when it is used.
    """

    session = models.ForeignKey("conversations.AgentSession", on_delete=models.CASCADE, related_name="approvals")
    tool_name = models.CharField(max_length=64)
    arguments_digest = models.CharField(max_length=64)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    page_handle_hash = models.CharField(max_length=64, unique=True, null=True, blank=True,
                                        help_text="Set when the approval is taken on Arkme's page.")
    approved_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=16, choices=ApprovalScope.choices, default=ApprovalScope.ONCE)
    scopes_offered = models.JSONField(default=list, blank=True)
    target = models.CharField(max_length=80, blank=True, default="",
                              help_text="What a standing grant from this approval would cover (an extension or group id).")
    card = models.JSONField(default=dict, blank=True, help_text="The card the human was shown.")

    class Meta:
        ordering = ["-id"]


class StandingGrant(models.Model):
    """A human's approval that covers later calls of one tool on one target in one session,
    until it expires, the session ends or it is revoked."""

    session = models.ForeignKey("conversations.AgentSession", on_delete=models.CASCADE, related_name="standing_grants")
    tool_name = models.CharField(max_length=64)
    target = models.CharField(max_length=80)
    approval = models.ForeignKey(ApprovalGrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_via = models.CharField(max_length=16, choices=ApprovalVia.choices, blank=True, default="")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["session", "tool_name", "target"], name="standing_grant_lookup")]


class ApprovalDecision(models.Model):
    """The approval record: each thing that happened to an approval or a standing grant, and
    where, linked to the tool call it allowed. Append-only, like the audit."""

    class Kind(models.TextChoices):
        ASKED = "asked", "Asked"
        APPROVED = "approved", "Approved"
        DECLINED = "declined", "Declined"
        EXPIRED = "expired", "Expired"
        USED = "used", "Used"
        REVOKED = "revoked", "Revoked"

    approval = models.ForeignKey(ApprovalGrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions")
    standing_grant = models.ForeignKey(StandingGrant, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="decisions")
    tool_call = models.ForeignKey("ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions")
    session_public_id = models.CharField(max_length=40, blank=True, default="", db_index=True)
    tool_name = models.CharField(max_length=64)
    decision = models.CharField(max_length=16, choices=Kind.choices)
    via = models.CharField(max_length=16, choices=ApprovalVia.choices)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

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
    approval = models.ForeignKey(ApprovalGrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                 help_text="The approval this call used.")
    standing_grant = models.ForeignKey(StandingGrant, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+", help_text="The standing grant that covered this call.")
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


class PendingQuestion(models.Model):
    """A question asked of a 2025-era MCP client on its call's SSE stream, waiting for the
    client's answer, which may reach any web process. The database's channel for the answer
    when the broker is not Redis (``toolregistry.mcp.answers``): the answer is written here once
    and read by the waiting process; with Redis the row is not used. ``token_hash``: the digest
    of the elicitation id the client answers under (never the id itself)."""

    token_hash = models.CharField(max_length=64, primary_key=True)
    client = models.ForeignKey("conversations.DshClient", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey("conversations.AgentSession", on_delete=models.CASCADE, related_name="+")
    expires_at = models.DateTimeField(db_index=True)
    answer = models.JSONField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)


class RateWindow(models.Model):
    """One limit's counter for one client, account or session, in its current window: the
    limiter's store when the broker is not Redis (``toolregistry.limits``). ``key`` names the
    tool, the limit's period and scope and the scope's row id, never anything secret; a new
    window overwrites the row, and rows whose window ended are pruned."""

    key = models.CharField(max_length=160, unique=True)
    window_start = models.BigIntegerField(help_text="The window's start, in seconds since the epoch.")
    hits = models.PositiveIntegerField()
    expires_at = models.DateTimeField(db_index=True)
