"""arkme_extension_preview_add: add images to an extension's preview gallery, confirmed in chat."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from toolregistry.metadata import (
    EXPLICIT_USER_WRITE,
    Approval,
    Effect,
    Kind,
    Phase,
    ToolContext,
    ToolDefinition,
    ToolMetadata,
)

if TYPE_CHECKING:
    from toolregistry.results import Cancelled, Confirmed, Prepared

METADATA = ToolMetadata(
    id="arkme.extension_preview.add@1",
    name="arkme_extension_preview_add",
    kind=Kind.BUSINESS,
    phase=Phase.ATTACHMENTS,
    effect=Effect.WRITE,
    grant=EXPLICIT_USER_WRITE,
    approval=Approval.CONVERSATION,
    profiles=("business", "hybrid"),
    title="Add preview images",
    idempotent=False,
)

DESCRIPTION = (
    "Adds images to the preview gallery of one of the user's extensions, in two steps. "
    "1) action=prepare with the extension id and one source: source=image_ref with an image_ref; "
    "source=attachments for the images the user attached to their latest message (optionally "
    "attachment_indices, 1-based); or source=workspace with 1-20 workspace_paths relative to the "
    "Agent workspace. PNG, JPEG, WebP, static GIF or simple SVG; each side 320-4096 px. Prepare "
    "returns an operation and a question: show the question to the user as it is. "
    "2) Only after the user replies 确认, call action=confirm with the same extension and operation. "
    "If they decline, call action=cancel. Never confirm on the user's behalf."
)

_PATHS = {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
          "items": {"type": "string", "minLength": 1, "maxLength": 1024}}
_INDICES = {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
            "items": {"type": "integer", "minimum": 1, "maximum": 20}}

# "This property must be absent": ``{"not": {}}`` says what a bare ``false`` subschema says,
# in a form every JSON Schema consumer accepts (the MCP Inspector's strict mode refuses booleans).
_ABSENT: dict[str, Any] = {"not": {}}

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["prepare", "confirm", "cancel"]},
        "extension": {"type": "string", "minLength": 1, "maxLength": 64, "description": "An extension id from arkme_context."},
        "source": {"enum": ["image_ref", "attachments", "workspace"]},
        "image_ref": {"type": "string", "minLength": 1, "maxLength": 512},
        "attachment_indices": _INDICES,
        "workspace_paths": _PATHS,
        "operation": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The operation from prepare."},
    },
    "required": ["action", "extension"],
    "additionalProperties": False,
    "allOf": [
        {"if": {"properties": {"action": {"const": "prepare"}}},
         "then": {"required": ["source"], "properties": {"operation": _ABSENT}}},
        {"if": {"properties": {"action": {"enum": ["confirm", "cancel"]}}},
         "then": {"required": ["operation"], "properties": {
             "source": _ABSENT, "image_ref": _ABSENT, "attachment_indices": _ABSENT, "workspace_paths": _ABSENT}}},
        {"if": {"properties": {"source": {"const": "image_ref"}}, "required": ["source"]},
         "then": {"required": ["image_ref"], "properties": {"attachment_indices": _ABSENT, "workspace_paths": _ABSENT}}},
        {"if": {"properties": {"source": {"const": "attachments"}}, "required": ["source"]},
         "then": {"properties": {"image_ref": _ABSENT, "workspace_paths": _ABSENT}}},
        {"if": {"properties": {"source": {"const": "workspace"}}, "required": ["source"]},
         "then": {"required": ["workspace_paths"], "properties": {"image_ref": _ABSENT, "attachment_indices": _ABSENT}}},
    ],
}

_SOURCE_KEYS = ("source", "image_ref", "attachment_indices", "workspace_paths")


def execute(context: ToolContext, arguments: Mapping[str, Any]) -> Prepared | Confirmed | Cancelled:
    """One result per action: prepare, confirm, cancel."""
    galleries = context.ports.galleries
    account, session, extension = context.account, context.session, arguments["extension"]
    action = arguments["action"]
    if action == "prepare":
        source: Any = {key: arguments[key] for key in _SOURCE_KEYS if key in arguments}
        return galleries.prepare_add(account=account, session=session, extension=extension, source=source)
    if action == "confirm":
        return galleries.confirm_add(account=account, session=session, extension=extension,
                                     operation=arguments["operation"])
    return galleries.cancel_add(account=account, session=session, extension=extension,
                                operation=arguments["operation"])


def ask_human(context: ToolContext, arguments: Mapping[str, Any]) -> str | None:
    """Confirm needs the human's 确认 after the prepare: the prepare's question, while it is missing."""
    if arguments.get("action") != "confirm":
        return None
    return context.ports.galleries.awaiting_confirmation(
        account=context.account, session=context.session, extension=arguments["extension"],
        operation=arguments["operation"])


def record_reply(context: ToolContext, arguments: Mapping[str, Any], text: str) -> None:
    """The human's reply to the question ask_human asked: it confirms this operation only."""
    context.ports.galleries.record_reply(
        account=context.account, session=context.session, extension=arguments["extension"],
        operation=arguments["operation"], text=text)


def definition() -> ToolDefinition:
    return ToolDefinition(name=METADATA.name, description=DESCRIPTION, input_schema=INPUT_SCHEMA, execute=execute,
                          ask_human=ask_human, record_reply=record_reply)
