"""arkme_extension_preview_reorder: put an extension's preview gallery in a new order."""
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
    id="arkme.extension_preview.reorder@1",
    name="arkme_extension_preview_reorder",
    kind=Kind.BUSINESS,
    phase=Phase.CORE,
    effect=Effect.WRITE,
    grant=EXPLICIT_USER_WRITE,
    approval=Approval.PRE_EXECUTE,
    profiles=("business", "hybrid"),
    title="Reorder preview images",
    destructive=True,
    idempotent=True,
)

DESCRIPTION = (
    "Reorders the preview gallery of one of the user's extensions. Pass the extension id, order "
    "(every current item id exactly once, first to last) and the gallery's current revision, as "
    "returned by arkme_context or by the latest gallery result. The human approves the new order "
    "first. Returns the gallery after the change."
)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "extension": {"type": "string", "minLength": 1, "maxLength": 64},
        "order": {"type": "array", "minItems": 1, "maxItems": 100, "uniqueItems": True,
                  "items": {"type": "string", "minLength": 1, "maxLength": 64}},
        "revision": {"type": "integer", "minimum": 0},
    },
    "required": ["extension", "order", "revision"],
    "additionalProperties": False,
}


def execute(context: ToolContext, arguments: Mapping[str, Any]) -> GalleryResult:
    return context.ports.galleries.reorder_items(
        account=context.account, extension=arguments["extension"],
        order=arguments["order"], revision=arguments["revision"],
    )


def describe_approval(context: ToolContext, arguments: Mapping[str, Any]) -> ApprovalCard:
    title, body = context.ports.galleries.describe_reorder(
        account=context.account, extension=arguments["extension"], order=arguments["order"]
    )
    return ApprovalCard(title=title, body=body)


def describe_page(context: ToolContext, arguments: Mapping[str, Any]) -> PageDetails:
    # The images in the new order: the order the call names is the gallery it leaves.
    return {"images": [{"extension": arguments["extension"], "item": item} for item in arguments["order"]]}


def grant_target(context: ToolContext, arguments: Mapping[str, Any]) -> str:
    """A standing grant covers later reorders of this one extension's gallery."""
    return f"extension:{arguments['extension']}"


def definition() -> ToolDefinition:
    return ToolDefinition(name=METADATA.name, description=DESCRIPTION, input_schema=INPUT_SCHEMA,
                          execute=execute, describe_approval=describe_approval, describe_page=describe_page,
                          grant_target=grant_target)
