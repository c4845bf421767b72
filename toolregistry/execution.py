"""Running a tool call: visibility, arguments, limits, idempotency, approval, execution and audit.

Every function here reads one ``Call`` (``calls.py``), built once by the door."""
from __future__ import annotations

import functools
import logging
import time
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, transaction
from opentelemetry.trace import StatusCode

from arkme.kernel.errors import ApprovalRequired, ArkmeError, CallCancelled
from arkme.kernel.metrics import APPROVALS, TOOL_CALLS, TOOL_SECONDS
from arkme.kernel.tracing import span as traced_span

from .approval_page import approval_page_required, approval_page_url
from .approval_record import approval_recorded
from .approvals import IssuedApproval, SealedApproval, approval_issue, approval_void
from .audit import OK, SERVER_ERROR, tool_call_begin, tool_call_end, tool_call_record
from .calls import Call
from .idempotency import CallResult, idempotency_claim, idempotency_complete, idempotency_release
from .limits import call_limit
from .metadata import ApprovalCard, Effect, PageDetails
from .models import ApprovalDecision, ApprovalVia, IdempotencyRecord, IdempotencyStatus
from .standing_grants import Allowed, call_allowed, call_offer, call_refusal_recorded, standing_grant_covering

logger = logging.getLogger(__name__)

__all__ = ["CallResult", "approval_ask", "approval_card", "approval_page_details", "tool_declined", "tool_execute",
           "tool_pre_execute", "tool_replay", "tool_throttled"]


def approval_card(call: Call) -> ApprovalCard:
    """The card a human approves for this exact call; raises the call's error when it cannot run."""
    describe = call.known.definition.describe_approval
    arguments = call.arguments()
    if describe is None:  # the catalog check (E014) refuses such a catalog at start-up
        raise ImproperlyConfigured(f"{call.known.metadata.name} has no approval card")
    return describe(call.context, arguments)


def tool_pre_execute(call: Call) -> dict[str, Any]:
    """The approval decision: allow, ask (with a card and an approval), or deny with an error."""
    tool = call.known
    with traced_span(f"pre_execute {tool.metadata.name}", {"gen_ai.tool.name": tool.metadata.name}) as span:
        decision = _pre_execute(call)
        span.set_attribute("arkme.decision", decision["decision"])
        return decision


def approval_page_details(call: Call) -> PageDetails:
    """What Arkme's approval page shows of this call besides its card (the tool's hook)."""
    describe = call.known.definition.describe_page
    return describe(call.context, call.arguments()) if describe is not None else {}


def _pre_execute(call: Call) -> dict[str, Any]:
    try:
        call.arguments()
        call_limit(call, count=False)  # a call past its limits is denied, not shown to the human
        if not call.needs_approval:
            return {"decision": "allow"}
        card = approval_card(call)
        if standing_grant_covering(call) is not None:
            return {"decision": "allow"}  # a standing grant covers it: nobody is asked
        page = approval_page_required(client=call.client, tool_name=call.known.metadata.name)
        issued, shown = approval_ask(call, card, page=page, via=ApprovalVia.PAGE if page else ApprovalVia.HOST)
    except ArkmeError as error:
        return {"decision": "deny", "error": error.as_error()}
    decision: dict[str, Any] = {"decision": "ask", "approval": issued.token}
    if issued.page_handle is not None:
        decision["approval_url"] = approval_page_url(issued.page_handle)
    return {**decision, "expires_at": issued.expires_at.isoformat(), "card": shown}


def approval_ask(call: Call, card: ApprovalCard, *, page: bool,
                 via: ApprovalVia) -> tuple[IssuedApproval, dict[str, Any]]:
    """Issue an approval for this call as ``card`` shows it (with the scopes it offers), and the
    card as the host shows it. ``page``: taken on Arkme's page, which also keeps what the page
    shows of the call (its images, people or IDs)."""
    offer = call_offer(call)
    shown: dict[str, Any] = {"title": card.title, "body": card.body, "scopes": list(offer.scopes)}
    details = approval_page_details(call) if page else None
    issued = approval_issue(session=call.session, tool_name=call.known.metadata.name, digest=call.digest,
                            offer=offer, card={**shown, "details": details} if page else shown, page=page, via=via)
    return issued, shown


def _perform(call: Call, *, begun: int | None) -> tuple[CallResult, Allowed | None]:
    """The tool's effect, with the approval used up (or the standing grant applied) in the same
    transaction when it needs one; what allowed it comes back for the audit row ``begun``."""
    tool = call.known
    allowed = None
    try:
        arguments = call.arguments()
        if call.needs_approval:
            try:
                # One transaction: if the call fails, the approval is still unused.
                with transaction.atomic():
                    allowed = call_allowed(call, tool_call=begun)
                    result = tool.definition.execute(call.context, arguments)
            except ApprovalRequired as refused:
                call_refusal_recorded(call, refused)
                raise
        else:
            result = tool.definition.execute(call.context, arguments)
    except ArkmeError as error:
        return CallResult(error.http_status, error.as_envelope()), None
    return CallResult(200, {"result": result}), allowed


def tool_declined(call: Call, *, approval: SealedApproval, error: ArkmeError) -> CallResult:
    """A human said no to a call they were asked about: the approval is spent, nothing runs,
    and the audit says so."""
    APPROVALS.labels("declined").inc()
    tool = call.known
    with transaction.atomic():
        voided = approval_void(session=call.session, tool_name=tool.metadata.name, sealed=approval, digest=call.digest)
        if voided is not None:
            approval_recorded(decision=ApprovalDecision.Kind.DECLINED, via=ApprovalVia.MCP_FORM,
                              session_public_id=call.session.public_id, tool_name=tool.metadata.name,
                              approval=voided)
        tool_call_record(session=call.session, tool_name=tool.metadata.name, tool_id=tool.metadata.id,
                         outcome=str(error.code), http_status=error.http_status, duration_ms=0,
                         replayed=False, surface=call.surface)
    return CallResult(error.http_status, error.as_envelope())


def tool_replay(call: Call) -> CallResult | None:
    """A repeat of a call whose ``Idempotency-Key`` already completed: the first call's answer
    (or the key's conflict), through the pipeline so the replay is audited, before a door asks
    the human anything again (the MCP form asks for an approval before the pipeline runs, and
    by the retry the card may say something else). None for a key that is new or still
    running: that call goes the whole way, approval included."""
    if call.idempotency_key is None or not IdempotencyRecord.objects.filter(
            client=call.client, session=call.session, key=call.idempotency_key,
            status=IdempotencyStatus.COMPLETE).exists():
        return None
    return tool_execute(call)


def tool_throttled(call: Call) -> CallResult | None:
    """The refusal of a call already past its limits, audited, before a door asks its human
    anything about it (nobody should approve a call that cannot run); the call is not counted
    here, only when it runs. None when it is within them, or when its arguments are refused,
    which the pipeline answers as it always does."""
    try:
        call.arguments()
    except ArkmeError:
        return None
    try:
        call_limit(call, count=False)
    except ArkmeError as error:
        result = CallResult(error.http_status, error.as_envelope())
        _audit(call, result, begun=None, replayed=False, seconds=0)
        return result
    return None


def tool_execute(call: Call) -> CallResult:
    """Run a call, as the GenAI conventions' ``execute_tool`` span."""
    label = call.label
    with traced_span(f"execute_tool {label}", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": label, "gen_ai.tool.type": "function",
            "arkme.surface": str(call.surface)}) as span:
        result = _execute(call)
        if result.status >= 400:
            code = str(result.body.get("error", {}).get("code", "error"))
            span.set_attribute("error.type", code)
            span.set_status(StatusCode.ERROR, code)
        return result


def _execute(call: Call) -> CallResult:
    started = time.monotonic()
    replayed = False
    record: IdempotencyRecord | None = None
    result: CallResult | None = None
    begun: int | None = None  # a write's audit row, written before its effect
    allowed: Allowed | None = None
    try:
        try:
            tool = call.known
            call.arguments()
            if call.idempotency_key:
                record, result = idempotency_claim(
                    client=call.client, session=call.session, key=call.idempotency_key,
                    tool_name=tool.metadata.name, digest=call.digest)
                replayed = result is not None
            if result is None:
                # A replay does nothing and is not counted. Before the approval is used: a
                # throttled call leaves it (and its key, released as a 429) for its retry, and
                # writes nothing but its audit row.
                call_limit(call)
                if tool.metadata.effect is Effect.WRITE:
                    begun = tool_call_begin(session=call.session, tool_name=tool.metadata.name,
                                            tool_id=tool.metadata.id, surface=call.surface)
                result, allowed = _perform(call, begun=begun)
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
        _audit(call, result, begun=begun, replayed=replayed, seconds=time.monotonic() - started, allowed=allowed)


def _audit(call: Call, result: CallResult | None, *, begun: int | None, replayed: bool, seconds: float,
           allowed: Allowed | None = None) -> None:
    status = result.status if result is not None else 500
    if result is None:
        outcome = SERVER_ERROR
    elif status < 400:
        outcome = OK
    else:
        outcome = str(result.body.get("error", {}).get("code", "error"))
    if begun is None:
        # Written before the answer; a failure here (the database gone) fails the call.
        tool_call_record(session=call.session, tool_name=call.name,
                         tool_id=call.tool.metadata.id if call.tool is not None else "", outcome=outcome,
                         http_status=status, duration_ms=int(seconds * 1000), replayed=replayed,
                         surface=call.surface, approval=allowed.approval if allowed is not None else None)
    else:
        _end_write(begun, outcome=outcome, http_status=status, duration_ms=int(seconds * 1000),
                   allowed=allowed or Allowed())
    calls, durations = _call_metrics(call.label, outcome, str(call.surface))
    calls.inc()
    durations.observe(seconds)


def _end_write(call: int, *, outcome: str, http_status: int, duration_ms: int, allowed: Allowed) -> None:
    """A write's row gets its ending. If that cannot be written, the effect has committed and
    its row exists (``in_progress``, an interrupted call to the audit), so the caller gets the
    result rather than an error that would invite a second effect; the failure is logged."""
    try:
        tool_call_end(call, outcome=outcome, http_status=http_status, duration_ms=duration_ms,
                      approval=allowed.approval, standing_grant=allowed.standing_grant)
    except DatabaseError:
        logger.exception("the audit row of a write could not be ended", extra={"tool_call": call, "outcome": outcome})


@functools.lru_cache(maxsize=4096)
def _call_metrics(tool: str, outcome: str, surface: str) -> tuple[Any, Any]:
    """The call counter and duration histogram of one label set, found once: ``labels()``
    takes the metric's lock and builds its key on every call. A known tool's name, never a
    caller's made-up one, and the closed set of outcomes: the label sets stay few, so the
    cache's bound is never reached (it is there so a mistake cannot grow it)."""
    return TOOL_CALLS.labels(tool, outcome, surface), TOOL_SECONDS.labels(tool, outcome, surface)
