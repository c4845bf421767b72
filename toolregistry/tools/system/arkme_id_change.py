"""arkme_id_change: the one-time change of the signed-in user's Arkme ID."""
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
    from toolregistry.results import AccountResult

METADATA = ToolMetadata(
    id="arkme.id.change@1",
    name="arkme_id_change",
    kind=Kind.SYSTEM,
    phase=Phase.CORE,
    effect=Effect.WRITE,
    grant=EXPLICIT_USER_WRITE,
    approval=Approval.PRE_EXECUTE,
    profiles=("business", "atomic", "hybrid"),
    title="Change the Arkme ID",
    destructive=True,
)

DESCRIPTION = (
    "Changes the signed-in user's Arkme ID. This can be done only once per account, so use "
    "it only when the user explicitly asks for a specific new ID. An Arkme ID has 6 to 20 "
    "characters: a letter first, then lower-case letters, digits or underscores. The human "
    "approves the exact new ID before it runs."
)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "arkme_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "description": "The new Arkme ID, e.g. alice_2026.",
        }
    },
    "required": ["arkme_id"],
    "additionalProperties": False,
}


def execute(context: ToolContext, arguments: Mapping[str, Any]) -> AccountResult:
    account = context.ports.accounts.change_arkme_id(
        account=context.account, arkme_id=arguments["arkme_id"]
    )
    return {"account": account}


def describe_approval(context: ToolContext, arguments: Mapping[str, Any]) -> ApprovalCard:
    # An ID the call would refuse as ill-formed is refused here, before a human is asked to
    # approve it: pre-execute denies with the error execute would give.
    new_id = context.ports.accounts.checked_arkme_id(arkme_id=arguments["arkme_id"])
    current = context.ports.accounts.account_view(account=context.account)
    if not current["arkme_id_changeable"]:
        # The card never promises what cannot happen; the call itself is refused with 409.
        return ApprovalCard(
            title="Change your Arkme ID?",
            body=f"Your Arkme ID {current['arkme_id']} was already changed once; this change will be refused.",
        )
    return ApprovalCard(
        title="Change your Arkme ID?",
        body=(
            f"Your Arkme ID will change from {current['arkme_id']} to {new_id}. "
            "An Arkme ID can be changed only once."
        ),
    )


def describe_page(context: ToolContext, arguments: Mapping[str, Any]) -> PageDetails:
    new_id = context.ports.accounts.checked_arkme_id(arkme_id=arguments["arkme_id"])
    old_id = context.ports.accounts.account_view(account=context.account)["arkme_id"]
    return {"id_change": {"old": old_id, "new": new_id}}


def definition() -> ToolDefinition:
    return ToolDefinition(
        name="arkme_id_change", description=DESCRIPTION, input_schema=INPUT_SCHEMA,
        execute=execute, describe_approval=describe_approval, describe_page=describe_page,
    )
