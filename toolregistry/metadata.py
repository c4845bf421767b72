"""The registry's own types: catalog metadata, tool definitions and the call context.

Tool modules import these and ``toolregistry.ports`` only (an import-linter contract).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, TypedDict

from .ports import Ports

if TYPE_CHECKING:
    from arkme.accounts.models import AccountKey
    from arkme.conversations.models import SessionKey


class Kind(enum.StrEnum):
    SYSTEM = "system"
    BUSINESS = "business"
    ATOMIC = "atomic"


class Phase(enum.StrEnum):
    CORE = "core"
    ATTACHMENTS = "attachments"


class Effect(enum.StrEnum):
    READ = "read"
    WRITE = "write"


class Approval(enum.StrEnum):
    NONE = "none"
    CONVERSATION = "conversation"
    PRE_EXECUTE = "pre-execute"


EXPLICIT_USER_WRITE = "explicit-user-write"


@dataclass(frozen=True)
class ToolMetadata:
    id: str
    name: str
    kind: Kind
    phase: Phase
    effect: Effect
    approval: Approval
    profiles: tuple[str, ...]
    grant: str | None = None
    # A human-readable name, for hosts that list tools to people (MCP's ``title``).
    title: str = ""
    # The Model Context Protocol's behaviour hints, stated per tool since only the tool knows:
    # destructive: it removes or rewrites what the user has (delete, reorder, a one-time change);
    # idempotent: the same call again changes nothing more (None: reads are, writes are not);
    # open_world: it reaches people or systems beyond the user's own (it sends messages).
    destructive: bool = False
    idempotent: bool | None = None
    open_world: bool = False

    def annotations(self) -> dict[str, bool]:
        """The Model Context Protocol's tool annotations, all four stated."""
        read_only = self.effect is Effect.READ
        return {
            "readOnlyHint": read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": read_only if self.idempotent is None else self.idempotent,
            "openWorldHint": self.open_world,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": str(self.kind),
            "phase": str(self.phase),
            "effect": str(self.effect),
            "grant": self.grant,
            "approval": str(self.approval),
            "annotations": self.annotations(),
        }


@dataclass(frozen=True)
class ToolContext:
    """Who a call acts for (the session's signed-in account), in which session, and the Ports."""

    account: AccountKey
    session: SessionKey
    ports: Ports


@dataclass(frozen=True)
class ApprovalCard:
    title: str
    body: str


class PageImage(TypedDict):
    """A gallery image the approval page shows: the extension and item, read again (and
    authorised again) when the page's image is served."""

    extension: str
    item: str


class IdChange(TypedDict):
    old: str
    new: str


class PageDetails(TypedDict, total=False):
    """What Arkme's approval page shows besides the card, so the human sees the objects
    themselves: the images in the order the call would leave them, the people's names, the old
    and new ID. Kept with the approval (JSON), never sent to DSH or the model."""

    images: list[PageImage]
    people: list[str]
    id_change: IdChange


Execute = Callable[[ToolContext, Mapping[str, Any]], Mapping[str, Any]]
DescribeApproval = Callable[[ToolContext, Mapping[str, Any]], ApprovalCard]
# The approval page's details of this exact call (beside describe_approval, which has checked
# the arguments by then).
DescribePage = Callable[[ToolContext, Mapping[str, Any]], PageDetails]
# The question a human must answer in the conversation before this call can go on, or None.
AskHuman = Callable[[ToolContext, Mapping[str, Any]], "str | None"]
# Record the human's reply to that question, asked them directly, for this call's object only.
RecordReply = Callable[[ToolContext, Mapping[str, Any], str], None]
# What a standing grant from this call's approval would cover: one object the call acts on
# (an extension, a group), as a stable id that names its kind. Raises the call's error.
GrantTarget = Callable[[ToolContext, Mapping[str, Any]], str]


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    execute: Execute
    # The JSON Schema of ``result`` (the MCP ``outputSchema``). A catalog tool states none: the
    # registry generates it from the type ``execute`` returns (toolregistry.results).
    output_schema: Mapping[str, Any] = field(default_factory=dict)
    describe_approval: DescribeApproval | None = field(default=None)
    describe_page: DescribePage | None = field(default=None)
    # A surface that can ask the human directly (an MCP elicitation) asks this question and
    # records the reply with ``record_reply``, bound to what was asked about (a message in the
    # conversation would answer every pending question); REST hosts relay it as a message.
    ask_human: AskHuman | None = field(default=None)
    record_reply: RecordReply | None = field(default=None)
    # A tool whose card may offer the ``session`` scope names the target a standing grant
    # covers; a tool without one (delete, the ID change) offers ``once`` alone.
    grant_target: GrantTarget | None = field(default=None)


class ToolModule(Protocol):
    """What every module in ``toolregistry/tools/<kind>/`` provides."""

    METADATA: ToolMetadata

    def definition(self) -> ToolDefinition: ...
