"""arkme_group_member_candidates: people from the user's private chats who could join a group."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from toolregistry.metadata import Approval, Effect, Kind, Phase, ToolContext, ToolDefinition, ToolMetadata

if TYPE_CHECKING:
    from toolregistry.results import CandidatesView

METADATA = ToolMetadata(
    id="arkme.group_member.candidates@1",
    name="arkme_group_member_candidates",
    kind=Kind.BUSINESS,
    phase=Phase.CORE,
    effect=Effect.READ,
    approval=Approval.NONE,
    profiles=("business", "hybrid"),
    title="Find people to add to a group",
)

DESCRIPTION = (
    "Lists people the user has private chats with who are not yet members of a group, newest "
    "conversation first. Pass the group's source_ref from arkme_context; optionally a query to "
    "match display names and a limit (1-100, default 50). Without a query only the recent chats "
    "are listed (scope \"recent\": at least the newest 1,000); with a query every chat is "
    "searched (scope \"all\"), so pass a query to find someone from an older chat. Each "
    "candidate has a display_name and a candidate_ref to pass to arkme_group_member_add; "
    "truncated says whether more matched."
)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "source_ref": {"type": "string", "minLength": 1, "maxLength": 512},
        "query": {"type": "string", "maxLength": 100},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
    },
    "required": ["source_ref"],
    "additionalProperties": False,
}


def execute(context: ToolContext, arguments: Mapping[str, Any]) -> CandidatesView:
    return context.ports.group_members.candidates(
        account=context.account,
        source_ref=arguments["source_ref"],
        query=arguments.get("query"), limit=arguments.get("limit", 50),
    )


def definition() -> ToolDefinition:
    return ToolDefinition(name=METADATA.name, description=DESCRIPTION, input_schema=INPUT_SCHEMA, execute=execute)
