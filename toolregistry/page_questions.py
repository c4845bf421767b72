"""Approvals taken on Arkme's page, asked of an MCP client's human: the URL the client opens
for them (URL-mode elicitation), or the page's address in ``approval_page_required`` for a
client that cannot open one.

The page is the only place such an approval is given: the client relays nothing but the
human's consent to open the address, so neither a leaked client key nor a host that says yes
on its own can approve. What the call presents to the ledger is decided here, beside the form
questions (``questions.py``); the ledger then holds it to the session, the tool, the exact
arguments, the account's answer and single use, as it holds a token.
"""
from __future__ import annotations

from typing import NoReturn, Protocol

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from arkme.conversations.models import AgentSession
from arkme.kernel.errors import ApprovalRequired
from arkme.kernel.ids import token_digest
from arkme.kernel.metrics import APPROVALS
from arkme.kernel.tracing import event

from .approval_page import approval_page_url
from .approval_record import approval_recorded
from .approvals import ApprovalStatus, OnPage, PageRequired, approval_status_of
from .calls import Call
from .execution import approval_ask, approval_card
from .models import ApprovalDecision, ApprovalGrant, ApprovalVia

PAGE_KEY = "page"


class UrlAsker(Protocol):
    """A door's way of sending its human to an address during a call."""

    def answered(self, prefix: str) -> list[str]:
        """The keys of the questions answered so far that start with ``prefix``."""

    def ask_url(self, key: str, text: str, url: str) -> bool:
        """Whether the human agreed to open ``url`` (question ``key``); a question not asked
        yet is asked: this raises, and the call ends until the answer comes back with it."""

    def wait_for_page(self, key: str, text: str, url: str) -> NoReturn:
        """The human opened the page and has not answered there yet: the call ends until they
        have (the question is asked again, or the door waits for the page)."""


def approval_on_page(call: Call, asker: UrlAsker | None, presented: object) -> object:
    """What this call presents to the ledger for an approval taken on the page.

    ``presented``: an approval the host brought (MCP ``_meta``), judged by the ledger like a
    token over REST. Otherwise the page approval this call's URL question named; or, for a call
    that asked nothing yet, one the account approved on the page for these exact arguments
    (after an ``approval_page_required``); else a new page approval, asked with ``asker`` or,
    without one, refused as ``approval_page_required`` with its address."""
    if presented is not None:
        return presented
    asked = asker.answered(PAGE_KEY + ".") if asker is not None else []
    if asker is not None and asked:
        return _answered(call, asker, asked[0])
    ready = _approvals(call).filter(approved_at__isnull=False).order_by("-id").first()
    if ready is not None:
        return OnPage(ready.pk)
    card = approval_card(call)
    issued, _ = approval_ask(call, card, page=True, via=ApprovalVia.MCP_URL if asker else ApprovalVia.PAGE)
    assert issued.page_handle is not None  # noqa: S101 - a page approval always has one
    url = approval_page_url(issued.page_handle)
    if asker is None:
        return PageRequired(url)
    asker.ask_url(f"{PAGE_KEY}.{issued.page_handle}", _text(card.title, card.body), url)
    raise AssertionError("a UrlAsker asks a new question before it answers")  # pragma: no cover


def _answered(call: Call, asker: UrlAsker, key: str) -> object:
    """The page approval the question ``key`` named, as it stands now."""
    handle = key.split(".", 1)[1]
    grant = _approvals(call, live=False).filter(page_handle_hash=token_digest(handle)).first()
    if grant is None:  # gone with its session (the question's state binds it to this call)
        raise ApprovalRequired(details={"reason": "invalid"})
    card = grant.card if isinstance(grant.card, dict) else {}
    text, url = _text(str(card.get("title", "")), str(card.get("body", ""))), approval_page_url(handle)
    if not asker.ask_url(key, text, url):
        _declined_by_client(call, grant)
    elif approval_status_of(grant) is ApprovalStatus.PENDING:
        asker.wait_for_page(key, text, url)
    return OnPage(grant.pk)  # approved, declined, used or expired: the ledger says which


def _declined_by_client(call: Call, grant: ApprovalGrant) -> None:
    """The human would not open the page: the approval is declined, so the page cannot turn
    it into a yes later, and the call is refused ``approval_declined`` by the ledger."""
    with transaction.atomic():
        declined = ApprovalGrant.objects.filter(pk=grant.pk, approved_at__isnull=True, declined_at__isnull=True,
                                                used_at__isnull=True).update(declined_at=timezone.now())
        if declined:
            approval_recorded(decision=ApprovalDecision.Kind.DECLINED, via=ApprovalVia.MCP_URL,
                              session_public_id=call.session.public_id, tool_name=grant.tool_name,
                              approval=grant)
    if declined:
        APPROVALS.labels("declined").inc()
        event("arkme.approval.decided", **{"arkme.approval.decision": "declined", "arkme.approval.via": "mcp_url"})


def _approvals(call: Call, *, live: bool = True) -> QuerySet[ApprovalGrant]:
    """This call's page approvals: its session, tool and exact arguments; ``live``: the ones
    still usable (not used, declined or expired)."""
    rows = ApprovalGrant.objects.filter(session=call.session, tool_name=call.known.metadata.name,
                                        arguments_digest=call.digest, page_handle_hash__isnull=False)
    if live:
        rows = rows.filter(used_at__isnull=True, declined_at__isnull=True, expires_at__gt=timezone.now())
    return rows


def page_decided(session: AgentSession, key: str) -> bool:
    """Whether the page approval the question ``key`` named has an answer, or can no longer
    get one (used or expired)."""
    handle = key.split(".", 1)[1] if key.startswith(PAGE_KEY + ".") else ""
    grant = ApprovalGrant.objects.filter(session=session, page_handle_hash=token_digest(handle)).first()
    return grant is None or approval_status_of(grant) is not ApprovalStatus.PENDING


def elicitation_id(key: str) -> str:
    """The ``elicitationId`` of a URL question (2025-11-25): opaque, and not the handle itself."""
    return "arkp_" + token_digest(key)[:32]


def _text(title: str, body: str) -> str:
    return f"{title}\n\n{body}\n\nOpen Arkme's approval page, signed in, to approve or decline this call there."
