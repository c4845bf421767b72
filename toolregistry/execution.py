"""Running a tool call: visibility, arguments, idempotency, approval, execution and audit."""
from __future__ import annotations

import functools
import logging
import time
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, transaction
from opentelemetry.trace import StatusCode

from arkme.accounts.models import AccountKey
from arkme.conversations.models import AgentSession, DshClient, SessionKey
from arkme.kernel.errors import ArkmeError, CallCancelled, UnknownTool
from arkme.kernel.metrics import APPROVALS, TOOL_CALLS, TOOL_SECONDS
from arkme.kernel.tracing import span as traced_span

from .approvals import SealedApproval, approval_consume, approval_issue, approval_void
from .arguments import arguments_digest, validate_arguments
from .audit import OK, SERVER_ERROR, tool_call_begin, tool_call_end, tool_call_record
from .idempotency import CallResult, idempotency_claim, idempotency_complete, idempotency_release
from .metadata import Approval, ApprovalCard, Effect, ToolContext
from .models import IdempotencyRecord, IdempotencyStatus, Surface
from .ports import current_ports
from .registrar import CompiledTool
from .sessions import session_toolset

logger = logging.getLogger(__name__)

__all__ = ["CallResult", "approval_card", "tool_declined", "tool_execute", "tool_pre_execute", "tool_replay",
           "visible_tool"]


def visible_tool(session: AgentSession, name: str) -> CompiledTool:
    """The tool, if the session may see it now; invisible and unknown are the same 404."""
    tool = session_toolset(session).get(str(name))
    if tool is None:
        raise UnknownTool()
    return tool


def tool_context(session: AgentSession) -> ToolContext:
    return ToolContext(
        account=AccountKey(session.account_id, session.account.public_id),
        session=SessionKey(session.pk, session.public_id, session.workspace),
        ports=current_ports(),
    )


def approval_card(session: AgentSession, tool: CompiledTool, arguments: Any) -> ApprovalCard:
    """The card a human approves for this exact call; raises the call's error when it cannot run."""
    arguments = validate_arguments(tool.validator, arguments)
    describe = tool.definition.describe_approval
    if describe is None:  # the catalog check (E014) refuses such a catalog at start-up
        raise ImproperlyConfigured(f"{tool.metadata.name} has no approval card")
    return describe(tool_context(session), arguments)


def tool_pre_execute(*, session: AgentSession, name: str, arguments: Any) -> dict[str, Any]:
    """The approval decision: allow, ask (with a card and an approval), or deny with an error."""
    tool = visible_tool(session, name)
    with traced_span(f"pre_execute {tool.metadata.name}", {"gen_ai.tool.name": tool.metadata.name}) as span:
        decision = _pre_execute(session, tool, arguments)
        span.set_attribute("arkme.decision", decision["decision"])
        return decision


def _pre_execute(session: AgentSession, tool: CompiledTool, arguments: Any) -> dict[str, Any]:
    try:
        if tool.metadata.approval is not Approval.PRE_EXECUTE:
            validate_arguments(tool.validator, arguments)
            return {"decision": "allow"}
        card = approval_card(session, tool, arguments)
    except ArkmeError as error:
        return {"decision": "deny", "error": error.as_error()}
    issued = approval_issue(session=session, tool_name=tool.metadata.name,
                            digest=arguments_digest(tool.metadata.name, arguments))
    return {
        "decision": "ask",
        "approval": issued.token,
        "expires_at": issued.expires_at.isoformat(),
        "card": {"title": card.title, "body": card.body},
    }


def _run(session: AgentSession, tool: CompiledTool, arguments: dict[str, Any], approval: object) -> CallResult:
    try:
        context = tool_context(session)
        if tool.metadata.approval is Approval.PRE_EXECUTE:
            digest = arguments_digest(tool.metadata.name, arguments)
            # One transaction: if the call fails, the approval is still unused.
            with transaction.atomic():
                approval_consume(session=session, tool_name=tool.metadata.name, digest=digest, token=approval)
                result = tool.definition.execute(context, arguments)
        else:
            result = tool.definition.execute(context, arguments)
    except ArkmeError as error:
        return CallResult(error.http_status, error.as_envelope())
    return CallResult(200, {"result": result})


def tool_declined(*, session: AgentSession, tool: CompiledTool, arguments: Any, approval: SealedApproval,
                  error: ArkmeError) -> CallResult:
    """A human said no to a call they were asked about: the approval is spent, nothing runs,
    and the audit says so."""
    APPROVALS.labels("declined").inc()
    with transaction.atomic():
        approval_void(session=session, tool_name=tool.metadata.name, sealed=approval,
                      digest=arguments_digest(tool.metadata.name, arguments))
        tool_call_record(session=session, tool_name=tool.metadata.name, tool_id=tool.metadata.id,
                         outcome=str(error.code), http_status=error.http_status, duration_ms=0,
                         replayed=False, surface=Surface.MCP)
    return CallResult(error.http_status, error.as_envelope())


def tool_replay(*, client: DshClient, session: AgentSession, name: str, arguments: Any, idempotency_key: str,
                surface: Surface, tool: CompiledTool | None = None) -> CallResult | None:
    """A repeat of a call whose ``Idempotency-Key`` already completed: the first call's answer
    (or the key's conflict), through the pipeline so the replay is audited, before a door asks
    the human anything again (the MCP form asks for an approval before the pipeline runs, and
    by the retry the card may say something else). None for a key that is new or still
    running: that call goes the whole way, approval included."""
    if not IdempotencyRecord.objects.filter(client=client, session=session, key=idempotency_key,
                                            status=IdempotencyStatus.COMPLETE).exists():
        return None
    return tool_execute(client=client, session=session, name=name, arguments=arguments,
                        idempotency_key=idempotency_key, surface=surface, tool=tool)


def tool_execute(*, client: DshClient, session: AgentSession, name: str, arguments: Any,
                 approval: object = None, idempotency_key: str | None = None,
                 surface: Surface = Surface.REST, tool: CompiledTool | None = None) -> CallResult:
    """Run a call, as the GenAI conventions' ``execute_tool`` span.

    ``tool``: the door already found ``name`` in this session's toolset in this request (the
    MCP server of that toolset), so it is not looked up again; without it, the tool is the
    session's visible one of that name, or the call is ``unknown_tool``."""
    if tool is not None and tool.metadata.name != name:
        raise ValueError(f"tool {tool.metadata.name!r} given for a call of {name!r}")
    known = tool if tool is not None else session_toolset(session).get(str(name))
    label = known.metadata.name if known is not None else "unknown"
    with traced_span(f"execute_tool {label}", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": label, "gen_ai.tool.type": "function",
            "arkme.surface": str(surface)}) as span:
        result = _execute(client=client, session=session, name=name, arguments=arguments, approval=approval,
                          idempotency_key=idempotency_key, surface=surface, tool=known)
        if result.status >= 400:
            code = str(result.body.get("error", {}).get("code", "error"))
            span.set_attribute("error.type", code)
            span.set_status(StatusCode.ERROR, code)
        return result


def _execute(*, client: DshClient, session: AgentSession, name: str, arguments: Any, approval: object,
             idempotency_key: str | None, surface: Surface, tool: CompiledTool | None) -> CallResult:
    """``tool``: the session's visible tool of that name, found once by ``tool_execute`` (None:
    unknown or invisible, refused here as ``unknown_tool``)."""
    started = time.monotonic()
    tool_id, tool_label, replayed = "", "unknown", False
    record: IdempotencyRecord | None = None
    result: CallResult | None = None
    begun: int | None = None  # a write's audit row, written before its effect
    try:
        try:
            if tool is None:
                raise UnknownTool()
            tool_id, tool_label = tool.metadata.id, tool.metadata.name
            arguments = validate_arguments(tool.validator, arguments)
            if idempotency_key:
                record, result = idempotency_claim(
                    client=client, session=session, key=idempotency_key, tool_name=tool.metadata.name,
                    digest=arguments_digest(tool.metadata.name, arguments))
                replayed = result is not None
            if result is None:
                if tool.metadata.effect is Effect.WRITE:
                    begun = tool_call_begin(session=session, tool_name=tool.metadata.name, tool_id=tool_id,
                                            surface=surface)
                result = _run(session, tool, arguments, approval)
        except ArkmeError as error:
            result = CallResult(error.http_status, error.as_envelope())
        if record is not None and result.status == CallCancelled.http_status:
            idempotency_release(record)  # nobody got this answer: a retry with the key does the work
        elif record is not None:
            idempotency_complete(record, result)
        return result
    except BaseException:
        if record is not None:
            idempotency_release(record)
        raise
    finally:
        status = result.status if result is not None else 500
        if result is None:
            outcome = SERVER_ERROR
        elif status < 400:
            outcome = OK
        else:
            outcome = str(result.body.get("error", {}).get("code", "error"))
        seconds = time.monotonic() - started
        if begun is None:
            # Written before the answer; a failure here (the database gone) fails the call.
            tool_call_record(session=session, tool_name=str(name), tool_id=tool_id, outcome=outcome,
                             http_status=status, duration_ms=int(seconds * 1000), replayed=replayed,
                             surface=surface)
        else:
            _end_write(begun, outcome=outcome, http_status=status, duration_ms=int(seconds * 1000))
        calls, durations = _call_metrics(tool_label, outcome, str(surface))
        calls.inc()
        durations.observe(seconds)


def _end_write(call: int, *, outcome: str, http_status: int, duration_ms: int) -> None:
    """A write's row gets its ending. If that cannot be written, the effect has committed and
    its row exists (``in_progress``, an interrupted call to the audit), so the caller gets the
    result rather than an error that would invite a second effect; the failure is logged."""
    try:
        tool_call_end(call, outcome=outcome, http_status=http_status, duration_ms=duration_ms)
    except DatabaseError:
        logger.exception("the audit row of a write could not be ended", extra={"tool_call": call, "outcome": outcome})


@functools.lru_cache(maxsize=4096)
def _call_metrics(tool: str, outcome: str, surface: str) -> tuple[Any, Any]:
    """The call counter and duration histogram of one label set, found once: ``labels()``
    takes the metric's lock and builds its key on every call. A known tool's name, never a
    caller's made-up one, and the closed set of outcomes: the label sets stay few, so the
    cache's bound is never reached (it is there so a mistake cannot grow it)."""
    return TOOL_CALLS.labels(tool, outcome, surface), TOOL_SECONDS.labels(tool, outcome, surface)
