"""The registry's own types: catalog metadata, tool definitions and the call context.

Tool modules import these and ``toolregistry.ports`` only (an import-linter contract).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

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

    def annotations(self) -> dict[str, bool]:
        """The Model Context Protocol's tool annotations, derived, never declared twice."""
        read_only = self.effect is Effect.READ
        return {
            "readOnlyHint": read_only,
            # Removing or rewriting what the user has is destructive; an approval stands in front.
            "destructiveHint": (not read_only) and self.approval is Approval.PRE_EXECUTE,
            "idempotentHint": read_only,
            "openWorldHint": False,
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


Execute = Callable[[ToolContext, Mapping[str, Any]], Mapping[str, Any]]
DescribeApproval = Callable[[ToolContext, Mapping[str, Any]], ApprovalCard]


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    execute: Execute
    # The JSON Schema of ``result`` (the MCP ``outputSchema``); every tool declares one.
    output_schema: Mapping[str, Any] = field(default_factory=dict)
    describe_approval: DescribeApproval | None = field(default=None)


class ToolModule(Protocol):
    """What every module in ``toolregistry/tools/<kind>/`` provides."""

    METADATA: ToolMetadata

    def definition(self) -> ToolDefinition: ...
