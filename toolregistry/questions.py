"""The questions a call asks its human while it runs: approve this exact call, and the
gallery's ``确认``.

A door that can ask a question in the middle of a call (MCP's form elicitation) lends an
``Asker``; what is asked, how the answer is checked and what it does are decided here, beside
the approval ledger, for every door alike.
"""
from __future__ import annotations

import hashlib
import secrets
import time
from datetime import UTC, datetime
from typing import Any, Protocol

from arkme.conversations.messages import MESSAGE_TEXT_MAX
from arkme.kernel.errors import ApprovalDeclined, ApprovalRequired, ArkmeError
from arkme.kernel.metrics import APPROVALS
from arkme.kernel.tracing import event

from .approval_record import approval_recorded
from .approvals import SealedApproval
from .calls import Call
from .execution import approval_card, tool_declined
from .models import ApprovalDecision, ApprovalScope, ApprovalVia
from .standing_grants import call_offer

APPROVAL_KEY = "approval"
REPLY_KEY = "reply"
APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve",
                               "description": "Run this call exactly as described."}},
    "required": ["approve"],
}
# Offered beside ``approve`` when the card offers a standing grant (``standing_grants``).
SCOPE_PROPERTY: dict[str, Any] = {
    "type": "string", "title": "Scope", "enum": ["once", "session"], "default": "once",
    "description": "once: this call only. session: also later calls of this tool on the same target in this "
                   "session, for a while.",
}
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reply": {"type": "string", "title": "Reply", "maxLength": MESSAGE_TEXT_MAX}},
    "required": ["reply"],
}


class Asker(Protocol):
    """A door's way of asking the human a question during a call."""

    def answered(self, prefix: str) -> list[str]:
        """The keys of the questions answered so far that start with ``prefix``."""

    def ask(self, key: str, text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """The human's answer to question ``key``, None when they declined or dismissed it.
        A question not answered yet is asked: this raises, and the call ends until the answer
        arrives with the call again."""


def approval_by_question(call: Call, asker: Asker) -> SealedApproval:
    """Ask the human to approve this exact call, or take their answer to the question asked.

    The question's key carries a random nonce, when it was asked and the card's digest; the
    door binds the key to the client, the session, the tool and the arguments (MCP signs it
    into ``requestState``). Nothing is stored until the answer is used: the ledger then records
    the nonce once, so a replayed answer is refused. Raises the refusal: the call's own error,
    ``approval_required`` (card changed) or ``approval_declined`` (recorded in the audit)."""
    asked = asker.answered(APPROVAL_KEY + ".")
    card = approval_card(call)
    text = f"{card.title}\n\n{card.body}"
    schema = approve_schema(call_offer(call).scopes)
    if not asked:
        key = f"{APPROVAL_KEY}.{secrets.token_urlsafe(16)}.{int(time.time())}.{_digest(text)}"
        APPROVALS.labels("asked").inc()
        event("arkme.approval.asked")
        # Nothing of the question is stored (its answer travels sealed), but the record keeps
        # that it was asked; the approval's row, made when the answer is used, has the rest.
        approval_recorded(decision=ApprovalDecision.Kind.ASKED, via=ApprovalVia.MCP_FORM,
                          session_public_id=call.session.public_id, tool_name=call.known.metadata.name)
        asker.ask(key, text, schema)
        raise AssertionError("an Asker asks a new question before it answers")  # pragma: no cover
    _, nonce, asked_at, card_digest = asked[0].split(".")
    sealed = SealedApproval(nonce=nonce, asked_at=datetime.fromtimestamp(int(asked_at), tz=UTC))
    if _digest(text) != card_digest:
        # What the human saw is not what would run now: nothing runs on that answer.
        APPROVALS.labels("refused_card_changed").inc()
        event("arkme.approval.refused", **{"arkme.approval.reason": "card_changed"})
        raise ApprovalRequired(details={"reason": "card_changed"})
    answer = asker.ask(asked[0], text, schema) or {}
    approved = answer.get("approve") is True
    event("arkme.approval.decided", **{"arkme.approval.decision": "approved" if approved else "declined"})
    if not approved:
        declined = ApprovalDeclined()
        tool_declined(call, approval=sealed, error=declined)
        raise declined
    scope = answer.get("scope")
    if scope == ApprovalScope.SESSION and "scope" in schema["properties"]:
        return SealedApproval(nonce=sealed.nonce, asked_at=sealed.asked_at, scope=ApprovalScope.SESSION)
    return sealed


def approve_schema(scopes: tuple[str, ...]) -> dict[str, Any]:
    """The approval form: ``approve``, and the choice of scope when the card offers more than once."""
    if len(scopes) < 2:
        return APPROVE_SCHEMA
    properties = {**APPROVE_SCHEMA["properties"], "scope": {**SCOPE_PROPERTY, "enum": list(scopes)}}
    return {**APPROVE_SCHEMA, "properties": properties}


def confirmation_by_question(call: Call, asker: Asker) -> None:
    """Ask the human the prepare's question when no ``确认`` is recorded after it. The reply is
    recorded by the tool for the operation it was asked about (it confirms that one alone),
    held to a message's text rules; confirm then decides. Arguments the tool refuses are left
    to the pipeline, which refuses them the same way on every door."""
    tool = call.known
    ask, record = tool.definition.ask_human, tool.definition.record_reply
    if ask is None or record is None:
        return
    try:
        arguments = call.arguments()
    except ArkmeError:
        return
    question = ask(call.context, arguments)
    if question is None:
        return
    event("arkme.confirmation.asked")
    answer = asker.ask(REPLY_KEY, question, REPLY_SCHEMA)
    reply = answer.get("reply") if answer is not None else None
    event("arkme.confirmation.answered",
          **{"arkme.confirmation.replied": bool(isinstance(reply, str) and reply.strip())})
    if isinstance(reply, str):
        record(call.context, arguments, reply)  # nothing recorded on a decline: confirm says 确认 is missing


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]
