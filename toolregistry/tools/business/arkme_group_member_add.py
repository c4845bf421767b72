"""arkme_group_member_add: add people to a group, or invite them where it needs approval."""
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
    from toolregistry.results import AddMembersView

METADATA = ToolMetadata(
    id="arkme.group_member.add@1",
    name="arkme_group_member_add",
    kind=Kind.BUSINESS,
    phase=Phase.CORE,
    effect=Effect.WRITE,
    grant=EXPLICIT_USER_WRITE,
    approval=Approval.PRE_EXECUTE,
    profiles=("business", "hybrid"),
    title="Add people to a group",
    open_world=True,
    idempotent=True,
)

DESCRIPTION = (
    "Adds 1-20 people to a group the user belongs to. Pass the group's source_ref and the "
    "candidate_refs from arkme_group_member_candidates. The human approves the exact list first. "
    "Each person gets an outcome: added (open group), invited (the group needs approval: they get "
    "a private invitation link in their chat with the user, and an admin approves), "
    "already_member, invalid_ref, expired_ref (list candidates again) or not_eligible."
)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "source_ref": {"type": "string", "minLength": 1, "maxLength": 512},
        "candidate_refs": {"type": "array", "minItems": 1, "maxItems": 20, "uniqueItems": True,
                           "items": {"type": "string", "minLength": 1, "maxLength": 512}},
    },
    "required": ["source_ref", "candidate_refs"],
    "additionalProperties": False,
}


def execute(context: ToolContext, arguments: Mapping[str, Any]) -> AddMembersView:
    return context.ports.group_members.add_members(
        account=context.account, source_ref=arguments["source_ref"],
        candidate_refs=arguments["candidate_refs"],
    )


def describe_approval(context: ToolContext, arguments: Mapping[str, Any]) -> ApprovalCard:
    title, body = context.ports.group_members.describe_add(
        account=context.account, source_ref=arguments["source_ref"],
        candidate_refs=arguments["candidate_refs"],
    )
    return ApprovalCard(title=title, body=body)


def describe_page(context: ToolContext, arguments: Mapping[str, Any]) -> PageDetails:
    return {"people": context.ports.group_members.names_to_add(
        account=context.account, source_ref=arguments["source_ref"], candidate_refs=arguments["candidate_refs"])}


def grant_target(context: ToolContext, arguments: Mapping[str, Any]) -> str:
    """A standing grant covers later additions to this one group, whichever source ref names
    it (a ref is signed afresh each time the context is read)."""
    return "group:" + context.ports.group_members.group_of(account=context.account, source_ref=arguments["source_ref"])


def definition() -> ToolDefinition:
    return ToolDefinition(name=METADATA.name, description=DESCRIPTION, input_schema=INPUT_SCHEMA,
                          execute=execute, describe_approval=describe_approval, describe_page=describe_page,
                          grant_target=grant_target)
