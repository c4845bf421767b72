"""arkme_extension_preview_delete: remove items from an extension's preview gallery."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from toolregistry.metadata import (
    EXPLICIT_USER_WRITE,
    Approval,
    ApprovalCard,
    Effect,
    Kind,
    PageDetails,
    Phase,
    ToolContext,
    ToolDefinition,
    ToolMetadata,
)

if TYPE_CHECKING:
    from toolregistry.results import GalleryResult

METADATA = ToolMetadata(
    id="arkme.extension_preview.delete@1",
    name="arkme_extension_preview_delete",
    kind=Kind.BUSINESS,
    phase=Phase.CORE,
    effect=Effect.WRITE,
    grant=EXPLICIT_USER_WRITE,
    approval=Approval.PRE_EXECUTE,
    profiles=("business", "hybrid"),
    title="Delete a preview image",
    destructive=True,
    idempotent=True,
)

DESCRIPTION = (
    "Deletes 1-20 images from the preview gallery of one of the user's extensions. Pass the "
    "extension id, the item ids to delete and the gallery's current revision, all as returned by "
    "arkme_context or by the latest gallery result. The human approves the exact deletion first. "
    "Returns the gallery after the change."
)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "extension": {"type": "string", "minLength": 1, "maxLength": 64},
        "items": {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
                  "items": {"type": "string", "minLength": 1, "maxLength": 64}},
        "revision": {"type": "integer", "minimum": 0},
    },
    "required": ["extension", "items", "revision"],
    "additionalProperties": False,
}


def execute(context: ToolContext, arguments: Mapping[str, Any]) -> GalleryResult:
    return context.ports.galleries.delete_items(
        account=context.account, extension=arguments["extension"],
        items=arguments["items"], revision=arguments["revision"],
    )


def describe_approval(context: ToolContext, arguments: Mapping[str, Any]) -> ApprovalCard:
    title, body = context.ports.galleries.describe_delete(
        account=context.account, extension=arguments["extension"], items=arguments["items"]
    )
    return ApprovalCard(title=title, body=body)


def describe_page(context: ToolContext, arguments: Mapping[str, Any]) -> PageDetails:
    # The images that stay, in the order they will be shown: the gallery as the call leaves it.
    doomed = set(arguments["items"])
    order = context.ports.galleries.item_order(account=context.account, extension=arguments["extension"])
    return {"images": [{"extension": arguments["extension"], "item": item} for item in order if item not in doomed]}


def definition() -> ToolDefinition:
    return ToolDefinition(name=METADATA.name, description=DESCRIPTION, input_schema=INPUT_SCHEMA,
                          execute=execute, describe_approval=describe_approval, describe_page=describe_page)
