"""The approval record of approvals nobody used: the purge records each lapsed approval as
``expired`` once, and leaves used, declined and live ones alone."""
from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from arkme.kernel.ids import token_digest
from toolregistry.approval_record import approvals_lapsed_recorded
from toolregistry.models import ApprovalDecision, ApprovalGrant, ApprovalVia

pytestmark = pytest.mark.django_db


def asked(dsh, session, arkme_id: str) -> ApprovalGrant:
    token = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": arkme_id}).json()["approval"]
    return ApprovalGrant.objects.get(token_hash=token_digest(token))


def expired_of(approval: ApprovalGrant) -> list[tuple[str, str]]:
    return list(approval.decisions.filter(decision="expired").values_list("decision", "via"))


def test_the_purge_records_each_lapsed_approval_once(dsh, session):
    lapsed, declined, live, used = (asked(dsh, session, f"alice_{n}") for n in ("a", "b", "c", "d"))
    past = timezone.now() - timedelta(seconds=1)
    ApprovalGrant.objects.filter(pk__in=[lapsed.pk, declined.pk, used.pk]).update(expires_at=past)
    ApprovalGrant.objects.filter(pk=declined.pk).update(declined_at=past)
    ApprovalGrant.objects.filter(pk=used.pk).update(used_at=past)
    assert approvals_lapsed_recorded(batch_size=1) == 1
    assert expired_of(lapsed) == [(ApprovalDecision.Kind.EXPIRED, ApprovalVia.SYSTEM)]
    assert not any(expired_of(a) for a in (declined, live, used))
    out = io.StringIO()
    call_command("arkme_sessions", "purge", stdout=out)  # the command runs it too: nothing new
    assert "0 lapsed approval(s) recorded expired" in out.getvalue()
    assert ApprovalDecision.objects.filter(decision="expired").count() == 1


def test_an_approval_presented_after_it_expired_is_not_recorded_twice(dsh, session):
    approval = asked(dsh, session, "alice_late")
    ApprovalGrant.objects.filter(pk=approval.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    decision = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_late2"}).json()
    ApprovalGrant.objects.filter(token_hash=token_digest(decision["approval"])).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    refused = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_late2"}, approval=decision["approval"])
    assert refused.status_code == 403
    assert ApprovalDecision.objects.filter(decision="expired").count() == 1  # recorded when it was presented
    assert approvals_lapsed_recorded() == 1  # the other one, never presented
    assert approvals_lapsed_recorded() == 0
    assert ApprovalDecision.objects.filter(decision="expired").count() == 2
