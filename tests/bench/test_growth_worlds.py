"""The growth figures' worlds hold what their docstrings say (no timing is asserted here)."""
from __future__ import annotations

import pytest

from arkme.accounts.models import Account
from arkme.conversations.models import AgentSession, DshClient
from bench import audit_growth, candidates_growth, sessions_growth
from groups.services import group_member_candidates
from toolregistry.models import ToolCall

pytestmark = pytest.mark.postgres


def test_candidates_density_means_members_among_the_recent_chats(postgres):
    filler = candidates_growth._people("f", 60)
    scene = candidates_growth.scene(200, filler)

    def found(density: int, size: int, query: str | None = None) -> list[str]:
        result = group_member_candidates(account=scene.account, source_ref=scene.refs[(density, size)], query=query,
                                         limit=100)
        return [c["display_name"] for c in result.candidates]

    # The oldest partner, Quill, is never a member: the one person the "oldest partner" query finds.
    assert found(100, 50_000) == ["Quill 200"] and len(found(0, 50_000)) == 100
    assert len(found(50, 50_000)) == 100 and found(90, 50_000)[-1] == "Quill 200"
    assert all(found(density, 50_000, "quill") == ["Quill 200"] for density in candidates_growth.DENSITIES)
    assert found(0, 50_000, "zzz") == [] and all(name.startswith("Kim") for name in found(0, 50_000, "kim"))
    # The small group holds its 50: the account, 49 recent partners at 100 %, the rest filler.
    assert found(100, 50)[0] == found(0, 50)[49]


@pytest.mark.django_db(transaction=True)
def test_sessions_world_and_its_measure(postgres):
    client = DshClient.objects.create(name="bench", key_prefix="bench", key_hash="0" * 64)
    account = Account.objects.create(display_name="Bench")
    sessions_growth._grow(client.pk, account.pk, 0, 2_000)
    assert AgentSession.objects.filter(closed_at__isnull=True).count() == 200
    row = sessions_growth._measure(client, 2_000)
    assert row["heap_only"] >= 0.95  # the figure's own goal: a page may now and then lack room
    assert AgentSession.objects.filter(closed_at__isnull=True).count() == 200  # the idle ones purged again


@pytest.mark.django_db(transaction=True)
def test_audit_world_and_its_pages(postgres, staff):
    audit_growth._grow(0, 10_000)
    assert ToolCall.objects.filter(tool_name="arkme_id_change").count() == 10
    assert ToolCall.objects.filter(http_status__gte=500).count() == 10
    assert ToolCall.objects.filter(outcome="revision_conflict").count() == 300
    assert audit_growth.baseline_size(0.001) == 100_000 and audit_growth.baseline_size(None) == 10_000
    for params, _ in audit_growth.PAGES.values():
        assert audit_growth._page_ms(staff, params) > 0
    found = staff.get("/admin/toolregistry/toolcall/", {"q": "req-5000"}).context["cl"]
    assert [call.request_id for call in found.result_list] == ["req-5000"]
