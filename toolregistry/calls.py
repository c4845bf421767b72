"""One tool call, built once by the door that received it and read by every step after.

REST and MCP translate a request into a ``Call`` and its ``CallResult`` back into their wire
format; the pipeline (``execution``), the approval ledger and the questions asked of a human
read the call: the tool is looked up once, the arguments validated once and digested at most
once, whichever steps a call takes.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from arkme.accounts.models import AccountKey
from arkme.conversations.models import AgentSession, DshClient, SessionKey
from arkme.kernel.errors import ArkmeError, UnknownTool

from .arguments import arguments_digest, validate_arguments
from .metadata import Approval, ToolContext
from .models import Surface
from .ports import current_ports
from .registrar import CompiledTool, Toolset
from .toolsets import session_toolset


@dataclass(eq=False)
class Call:
    """A call of ``name`` in ``session`` by ``client`` with the caller's ``raw_arguments``.

    ``tool`` is the session's visible tool of that name, or None (unknown and invisible are
    the same ``unknown_tool``). ``approval`` is what the caller presented: a token over REST or
    MCP ``_meta``, or a human's sealed answer to the MCP question."""

    client: DshClient
    session: AgentSession
    name: str
    tool: CompiledTool | None
    raw_arguments: Any
    surface: Surface
    idempotency_key: str | None = None
    approval: object = None
    # The scope the human chose for the approval presented (``once`` or ``session``), when
    # the door heard it beside the approval (REST ``execute``); None: as the approval says.
    scope: str | None = None
    _checked: dict[str, Any] | ArkmeError | None = field(default=None, init=False, repr=False)

    @property
    def known(self) -> CompiledTool:
        """The tool, or the call's ``unknown_tool``."""
        if self.tool is None:
            raise UnknownTool()
        return self.tool

    @property
    def label(self) -> str:
        """The tool's name for metrics and traces: never a caller's made-up one."""
        return self.tool.metadata.name if self.tool is not None else "unknown"

    @property
    def needs_approval(self) -> bool:
        return self.tool is not None and self.tool.metadata.approval is Approval.PRE_EXECUTE

    def arguments(self) -> dict[str, Any]:
        """The arguments as the tool takes them, validated on first use; a refusal is kept and
        raised again, so a call is validated once whichever steps ask."""
        if self._checked is None:
            try:
                self._checked = validate_arguments(self.known.validator, self.raw_arguments)
            except ArkmeError as error:
                # Kept without its traceback, whose frames name this call, and raised as a
                # copy: a kept error that was raised would hold the call in a reference cycle.
                self._checked = error.with_traceback(None)
        if isinstance(self._checked, ArkmeError):
            raise copy.copy(self._checked)
        return self._checked

    @cached_property
    def digest(self) -> str:
        """What an approval and an ``Idempotency-Key`` are bound to: the tool and the exact
        arguments (integral numbers as ints, so ``5.0`` and ``5`` are one call)."""
        return arguments_digest(self.known.metadata.name, self.arguments())

    @cached_property
    def grant_target(self) -> str:
        """What a standing grant for this call covers (the tool's ``grant_target``), or ""
        for a tool that offers none. Raises the call's error (a bad ref, a group left)."""
        hook = self.known.definition.grant_target
        return "" if hook is None else hook(self.context, self.arguments())

    @cached_property
    def context(self) -> ToolContext:
        session = self.session
        return ToolContext(
            account=AccountKey(session.account_id, session.account.public_id),
            session=SessionKey(session.pk, session.public_id, session.workspace),
            ports=current_ports(),
        )


def call_for(*, client: DshClient, session: AgentSession, name: str, arguments: Any, surface: Surface,
             idempotency_key: str | None = None, approval: object = None, scope: str | None = None,
             toolset: Toolset | None = None) -> Call:
    """The call of ``name`` in this session, its tool looked up here once. ``toolset``: the
    session's, when the door has already looked it up in this request."""
    if toolset is None:
        toolset = session_toolset(session)
    return Call(client=client, session=session, name=str(name), tool=toolset.get(str(name)),
                    raw_arguments=arguments, surface=surface, idempotency_key=idempotency_key,
                    approval=approval, scope=scope)
