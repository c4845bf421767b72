"""Request validation and the documented response shapes of the DSH API."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from arkme.conversations.messages import MESSAGE_TEXT_MAX, message_text_checked
from arkme.kernel.errors import ErrorCode, InvalidRequest

from ..approvals import ApprovalStatus


class StrictSerializer(serializers.Serializer):
    """Unknown fields are refused (400), as unknown tool arguments are."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(getattr(self, "initial_data", {}) or {}) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
        return attrs


class StringField(serializers.CharField):
    """A JSON string and nothing else: DRF's CharField also takes a number as its text, so
    ``"id": 5`` and ``"id": "5"`` would name one message, and a schema that says string would
    not be the rule."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class SessionOpenRequest(StrictSerializer):
    account = StringField(max_length=64, help_text="The account's public id.")
    profile = StringField(max_length=20, required=False,
                          help_text="business, atomic, hybrid or disabled; default ARKME_TOOL_PROFILE.")
    workspace = StringField(max_length=64, required=False, allow_blank=False,
                            help_text="The Agent workspace folder, [A-Za-z0-9_-]{1,64}.")


def _message_text(value: str) -> None:
    """The text rules of everything the human says (message_text_checked), so that a message
    and an MCP form's reply are held to the same ones."""
    try:
        message_text_checked(value)
    except InvalidRequest as refused:
        raise serializers.ValidationError(refused.message) from None


class MessageText(StrictSerializer):
    """A message as JSON: its id and text."""

    id = StringField(max_length=128, help_text="Unique per session.")
    text = StringField(max_length=MESSAGE_TEXT_MAX, required=False, allow_blank=True, default="",
                       trim_whitespace=False, validators=[_message_text])


# Two schemas, one per content type, so that generated clients type each body exactly.
class MessageRequest(MessageText):
    """A message as multipart/form-data: its id, its text and its files, in order."""

    attachments = serializers.ListField(
        child=serializers.FileField(), required=False, default=list,
        help_text="The message's files, in order, each at most 20 MiB.",
    )


class ArgumentsRequest(StrictSerializer):
    arguments = serializers.JSONField(help_text="The tool's arguments, validated against its input_schema.")


class ExecuteRequest(ArgumentsRequest):
    approval = StringField(max_length=100, required=False, allow_null=True,
                                     help_text="The approval from pre-execute, when the human accepted the card.")
    scope = serializers.ChoiceField(
        choices=["once", "session"], required=False, allow_null=True,
        help_text="The scope the human chose on the card (one of its `scopes`): `session` also covers later "
                  "calls of this tool in this session on the same target, as a standing grant. Default `once`.")


# --- Documented responses ------------------------------------------------------------------

class ErrorBody(serializers.Serializer):
    code = serializers.ChoiceField(choices=[(code.value, code.name) for code in ErrorCode],
                                   help_text="A stable word from the registry of error codes.")
    message = serializers.CharField()
    details = serializers.DictField(required=False)


class ErrorEnvelope(serializers.Serializer):
    error = ErrorBody()


class ToolMetadataView(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["system", "business", "atomic"])
    phase = serializers.ChoiceField(choices=["core", "attachments"])
    effect = serializers.ChoiceField(choices=["read", "write"])
    grant = serializers.CharField(allow_null=True)
    approval = serializers.ChoiceField(choices=["none", "conversation", "pre-execute"])
    annotations = serializers.DictField(child=serializers.BooleanField())


class ToolDefinitionView(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    input_schema = serializers.DictField()
    metadata = ToolMetadataView()


class CatalogEntryView(ToolMetadataView):
    name = serializers.CharField()
    profiles = serializers.ListField(child=serializers.CharField())


class ProfileView(serializers.Serializer):
    name = serializers.CharField()
    kinds = serializers.ListField(child=serializers.CharField())


class CatalogView(serializers.Serializer):
    tools = CatalogEntryView(many=True)
    profiles = ProfileView(many=True)
    default_profile = serializers.CharField()


class SessionView(serializers.Serializer):
    session = serializers.CharField()
    profile = serializers.CharField()
    phases = serializers.ListField(child=serializers.ChoiceField(choices=["core", "attachments"]))
    revision = serializers.CharField(help_text="Changes whenever the tool list or prompt changes.")
    tools = ToolDefinitionView(many=True)
    prompt = serializers.CharField(allow_blank=True)


class MessageRecorded(serializers.Serializer):
    id = serializers.CharField()
    attachments = serializers.IntegerField(help_text="How many files were captured.")


class CardView(serializers.Serializer):
    title = serializers.CharField()
    body = serializers.CharField()
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=["once", "session"]),
        help_text="The scopes the human may choose: `once`, and `session` where a standing grant can cover later "
                  "calls on the same target (reorder: the extension; member add: the group).")


class PreExecuteDecision(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["allow", "ask", "deny"])
    approval = serializers.CharField(required=False, help_text="With ask: single-use, bound to session, tool and arguments.")
    approval_url = serializers.URLField(
        required=False,
        help_text="With ask, for tools whose approvals are taken on Arkme's own page: the page's address (on "
                  "Arkme's host, carrying only an opaque handle). Show it to the human; the approval stays pending "
                  "until the session's account approves there (GET sessions/{session}/approvals/{approval}).")
    expires_at = serializers.DateTimeField(required=False, help_text="With ask: when the approval lapses (an addition to the contract).")
    card = CardView(required=False)
    error = ErrorBody(required=False)


class ApprovalStatusView(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=[str(status) for status in ApprovalStatus],
        help_text="pending: waiting for the account's answer on Arkme's page. approved: execute may use it (an "
                  "approval not taken on the page is approved from the start). declined: execute is refused. "
                  "expired, used: it no longer counts.")


class ExecuteResult(serializers.Serializer):
    result = serializers.DictField(help_text="The tool's result; see the tool's description.")
