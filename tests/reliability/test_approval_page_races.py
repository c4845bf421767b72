"""Page approvals racing on PostgreSQL: the account's answer on the page against executes using
the approval, each thread on its own connection. An approval runs at most once, never before
it was approved, and never once declined."""
from __future__ import annotations

from collections import Counter

import pytest
from django.db import transaction

from arkme.conversations.clients import dsh_client_create
from arkme.conversations.models import AgentSession
from arkme.kernel.ids import token_digest
from tests.support.concurrency import race
from toolregistry.approvals import approval_consume, approval_decide, approval_issue
from toolregistry.models import ApprovalGrant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

USERS = 6
ROUNDS = 8


@pytest.fixture
def session(postgres, world):
    client, _ = dsh_client_create(name="page-race")
    return AgentSession.objects.create(client=client, account=world.alice, profile="business")


def consumer(session, token):
    def use():
        with transaction.atomic():
            approval_consume(session=session, tool_name="arkme_extension_preview_reorder", digest="d", token=token)
        return "used"
    return use


@pytest.mark.parametrize("approve", [True, False], ids=["approve", "decline"])
def test_an_answer_racing_executes_lets_at_most_one_run_and_only_an_approved_one(session, world, approve, figures):
    seen: Counter[str] = Counter()
    for _ in range(ROUNDS):
        issued = approval_issue(session=session, tool_name="arkme_extension_preview_reorder", digest="d", page=True)
        assert issued.page_handle is not None
        handle = issued.page_handle
        outcomes = race([lambda: str(approval_decide(handle=handle, account=world.alice, approve=approve).status),
                         *(consumer(session, issued.token) for _ in range(USERS))])
        assert ("ok", "approved" if approve else "declined") == outcomes[0], outcomes
        uses = outcomes[1:]
        assert all(kind in ("ok", "error") for kind, _ in uses), uses
        ran = [value for kind, value in uses if kind == "ok"]
        grant = ApprovalGrant.objects.get(token_hash=token_digest(issued.token))
        if approve:
            assert len(ran) <= 1
            assert (grant.used_at is not None) == bool(ran)
            if ran:
                assert grant.approved_at is not None and grant.approved_at <= grant.used_at
        else:
            assert ran == [] and grant.used_at is None and grant.declined_at is not None
        seen.update(str(value) for _, value in uses)
    # Every refusal is one of the contract's: pending, declined, or used by the winner.
    assert set(seen) <= {"used", "approval_pending", "approval_declined", "approval_required"}, seen
    figures.add("page_approval_races_run", ROUNDS)
