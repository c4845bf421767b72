"""Running a tool call: visibility, arguments, idempotency, approval, execution and audit."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from arkme.composition import current_ports
from arkme.errors import ArkmeError, Conflict, UnknownTool

from .approvals import approval_consume, approval_issue
from .arguments import arguments_digest, validate_arguments
from .metadata import Approval, Principal, ToolContext
from .models import AgentSession, DshClient, IdempotencyRecord, IdempotencyStatus, ToolCall
from .registrar import CompiledTool
from .sessions import session_toolset

logger = logging.getLogger(__name__)
IDEMPOTENCY_WAIT_SECONDS = 10.0
IDEMPOTENCY_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class CallResult:
    status: int
    body: dict[str, Any]


def visible_tool(session: AgentSession, name: str) -> CompiledTool:
    """The tool, if the session may see it now; invisible and unknown are the same 404."""
    tool = session_toolset(session).get(str(name))
    if tool is None:
        raise UnknownTool()
    return tool


def tool_context(session: AgentSession) -> ToolContext:
    return ToolContext(
        principal=Principal(account_pk=session.account_id, account_public_id=session.account.public_id),
        session_public_id=session.public_id,
        session_pk=session.pk,
        workspace=session.workspace or None,
        ports=current_ports(),
    )


def tool_pre_execute(*, session: AgentSession, name: str, arguments: Any) -> dict[str, Any]:
    """The approval decision: allow, ask (with a card and an approval), or deny with an error."""
    tool = visible_tool(session, name)
    try:
        validate_arguments(tool.validator, arguments)
        if tool.metadata.approval is not Approval.PRE_EXECUTE:
            return {"decision": "allow"}
        card = tool.definition.describe_approval(tool_context(session), arguments)
    except ArkmeError as error:
        return {"decision": "deny", "error": error.as_envelope()["error"]}
    issued = approval_issue(
        session=session, tool_name=tool.metadata.name,
        digest=arguments_digest(tool.metadata.name, arguments), card=card,
    )
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
            with transaction.atomic():
                approval_consume(session=session, tool_name=tool.metadata.name, digest=digest, token=approval)
                result = tool.definition.execute(context, arguments)
        else:
            result = tool.definition.execute(context, arguments)
    except ArkmeError as error:
        return CallResult(error.http_status, error.as_envelope())
    return CallResult(200, {"result": result})


def _claim_key(client: DshClient, session: AgentSession, key: str, tool_name: str,
               digest: str) -> tuple[IdempotencyRecord | None, CallResult | None]:
    """Claim the key for this call, or return the first call's response to replay."""
    try:
        with transaction.atomic():
            record = IdempotencyRecord.objects.create(
                client=client, session=session, key=key, tool_name=tool_name, request_digest=digest
            )
        return record, None
    except IntegrityError:
        pass
    deadline = time.monotonic() + IDEMPOTENCY_WAIT_SECONDS
    while True:
        existing = IdempotencyRecord.objects.filter(client=client, session=session, key=key).first()
        if existing is None:
            # The first call failed and let the key go: this one may do the work.
            return _claim_key(client, session, key, tool_name, digest)
        if existing.request_digest != digest:
            raise Conflict("This Idempotency-Key was used with other arguments.", code="idempotency_key_reused")
        if existing.status == IdempotencyStatus.COMPLETE:
            return None, CallResult(existing.response_status, existing.response_body)
        if time.monotonic() > deadline:
            raise Conflict("A call with this Idempotency-Key is still running.", code="idempotency_in_progress")
        time.sleep(IDEMPOTENCY_POLL_SECONDS)


def tool_execute(*, client: DshClient, session: AgentSession, name: str, arguments: Any,
                 approval: object = None, idempotency_key: str | None = None) -> CallResult:
    started = time.monotonic()
    tool_id, replayed, record = "", False, None
    result: CallResult | None = None
    try:
        try:
            tool = visible_tool(session, name)
            tool_id = tool.metadata.id
            validate_arguments(tool.validator, arguments)
            if idempotency_key:
                record, result = _claim_key(client, session, idempotency_key, tool.metadata.name,
                                            arguments_digest(tool.metadata.name, arguments))
                replayed = result is not None
            if result is None:
                result = _run(session, tool, arguments, approval)
        except ArkmeError as error:
            result = CallResult(error.http_status, error.as_envelope())
        if record is not None:
            if result.status >= 500:
                record.delete()  # a dependency failed: the caller may retry with the same key
            else:
                record.status = IdempotencyStatus.COMPLETE
                record.response_status, record.response_body = result.status, result.body
                record.save(update_fields=["status", "response_status", "response_body"])
        return result
    except BaseException:
        if record is not None:
            IdempotencyRecord.objects.filter(pk=record.pk).delete()
        raise
    finally:
        outcome = "server_error"
        status = 500
        if result is not None:
            status = result.status
            outcome = "ok" if status < 400 else result.body.get("error", {}).get("code", "error")
        ToolCall.objects.create(
            session=session, tool_name=str(name)[:64], tool_id=tool_id, outcome=outcome[:64],
            http_status=status, duration_ms=int((time.monotonic() - started) * 1000), replayed=replayed,
        )
