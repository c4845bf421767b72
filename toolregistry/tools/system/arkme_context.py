"""arkme_context: the signed-in user's account, extensions (with galleries) and groups."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from toolregistry.metadata import (
    Approval,
    Effect,
    Kind,
    Phase,
    ToolContext,
    ToolDefinition,
    ToolMetadata,
)

if TYPE_CHECKING:
    from toolregistry.results import ContextResult

METADATA = ToolMetadata(
    id="arkme.context@1",
    name="arkme_context",
    kind=Kind.SYSTEM,
    phase=Phase.CORE,
    effect=Effect.READ,
    approval=Approval.NONE,
    profiles=("business", "atomic", "hybrid"),
    title="The user's Arkme context",
)

DESCRIPTION = (
    "Returns the signed-in Arkme user's account (display name, Arkme ID and whether it can "
    "still be changed), their own extensions with each one's current preview gallery (item "
    "ids, positions and the gallery revision), and the groups they belong to, each with a "
    "source_ref. Call it first: the other Arkme tools take the extension ids, item ids, "
    "revisions and source_refs it returns. Never invent these handles."
)

INPUT_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}

def execute(context: ToolContext, arguments: Mapping[str, Any]) -> ContextResult:
    ports = context.ports
    return {
        "account": ports.accounts.account_view(account=context.account),
        "extensions": ports.extensions.extensions_with_galleries(account=context.account),
        "groups": ports.groups.groups_with_source_refs(account=context.account),
    }


def definition() -> ToolDefinition:
    return ToolDefinition(
        name="arkme_context", description=DESCRIPTION, input_schema=INPUT_SCHEMA, execute=execute,
    )
