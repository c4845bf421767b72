"""Standing grants over MCP with the official Python SDK: the 2026-07-28 form offers the
scope, a grant covers the next call on the same target without asking, and never another
target or a call after revocation; a 2025-era client runs under a grant DSH opened over REST."""
from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from galleries.services.extensions import extension_create
from tests.support.errors import assert_tool_error
from tests.support.galleries import GallerySession
from toolregistry.models import ApprovalDecision, ApprovalVia, StandingGrant, ToolCall
from toolregistry.standing_grants import standing_grant_revoke

from . import test_mcp_sdk
from .test_mcp_sdk import MODERN, Human, connect, run
from .test_standing_grants import REORDER, execute

pytestmark = pytest.mark.django_db(transaction=True)
host = test_mcp_sdk.host  # the SDK tests' fixture: a DSH client, alice's session and the MCP URL


class Asked(Human):
    """A human who also remembers each form's fields."""

    def __init__(self, **answers: Any) -> None:
        super().__init__(**answers)
        self.fields: list[set[str]] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.fields.append(set(params.requested_schema["properties"]))
        return await super().__call__(context, params)


@pytest.fixture
def gallery(host, world):
    dsh, _, session, root, _ = host
    dsh.put(f"sessions/{session}/phases/attachments")
    gs = GallerySession(dsh=dsh, session=session, workspace=root, extension=world.alice_ext.public_id)
    gs.add_confirmed(gs.write_many(3))
    return gs


def reorders(url: str, key: str, human: Human, extension: str, orders: list[list[str]], revision: int,
             mode: str = MODERN) -> list[Any]:
    async def main():
        results = []
        async with connect(url, key, mode, human) as client:
            for step, order in enumerate(orders):
                results.append(await client.call_tool(REORDER, {
                    "extension": extension, "order": order, "revision": revision + step}))
        return results

    return run(main)


def _items(gs: GallerySession) -> tuple[list[str], int]:
    gallery = gs.gallery()
    return [item["item"] for item in gallery["items"]], gallery["revision"]


def test_the_form_offers_the_scope_and_a_grant_covers_the_next_reorder(host, gallery):
    _, key, _, _, url = host
    items, revision = _items(gallery)
    human = Asked(approve=True, scope="session")
    first, second = reorders(url, key, human, gallery.extension, [items[::-1], items], revision)
    assert first.is_error is False and second.is_error is False, (first, second)
    assert len(human.asked) == 1 and human.fields == [{"approve", "scope"}]
    grant = StandingGrant.objects.get()
    calls = ToolCall.objects.filter(tool_name=REORDER, surface="mcp").order_by("id")
    assert [(c.approval_id is not None, c.standing_grant_id) for c in calls] == [(True, grant.pk), (False, grant.pk)]
    used = ApprovalDecision.objects.filter(decision="used").order_by("id")
    assert [(u.via, u.tool_call_id) for u in used] == [("mcp_form", calls[0].pk), ("system", calls[1].pk)]
    record = ApprovalDecision.objects.filter(tool_name=REORDER).order_by("id")
    assert [(row.decision, row.via) for row in record] == [
        ("asked", "mcp_form"), ("approved", "mcp_form"), ("used", "mcp_form"), ("used", "system")]
    assert record[1].approval_id == calls[0].approval_id == grant.approval_id


def test_once_asks_every_time_and_delete_offers_no_scope(host, gallery):
    _, key, _, _, url = host
    items, revision = _items(gallery)
    human = Asked(approve=True)
    results = reorders(url, key, human, gallery.extension, [items[::-1], items], revision)
    assert [r.is_error for r in results] == [False, False] and len(human.asked) == 2
    assert not StandingGrant.objects.exists()

    async def delete():
        async with connect(url, key, MODERN, human) as client:
            return await client.call_tool("arkme_extension_preview_delete", {
                "extension": gallery.extension, "items": items[:1], "revision": revision + 2})

    assert run(delete).is_error is False and human.fields[-1] == {"approve"}


def test_a_grant_covers_no_other_extension_and_nothing_after_revocation(host, gallery, world):
    dsh, key, session, _, url = host
    items, revision = _items(gallery)
    reorders(url, key, Human(approve=True, scope="session"), gallery.extension, [items[::-1]], revision)
    other = GallerySession(dsh=dsh, session=session, workspace=gallery.workspace,
                           extension=extension_create(owner=world.alice, name="alice-second").public_id)
    other.add_confirmed(other.write_many(2, start=5))
    other_items, other_revision = _items(other)
    no = Asked(approve=False)
    [elsewhere] = reorders(url, key, no, other.extension, [other_items[::-1]], other_revision)
    assert len(no.asked) == 1
    assert_tool_error(elsewhere, "approval_declined")
    standing_grant_revoke(StandingGrant.objects.get(), via=ApprovalVia.STAFF)
    [after] = reorders(url, key, no, gallery.extension, [items], revision + 1)
    assert_tool_error(after, "approval_declined")
    assert len(no.asked) == 2 and _items(gallery) == (items[::-1], revision + 1)
    declined = ApprovalDecision.objects.filter(decision="declined")
    assert [row.via for row in declined] == ["mcp_form", "mcp_form"]


def test_a_2025_client_runs_under_a_grant_opened_over_rest(host, gallery, world):
    dsh, key, session, _, url = host
    items, revision = _items(gallery)
    arguments = {"extension": gallery.extension, "order": items[::-1], "revision": revision}
    decision = dsh.pre_execute(session, REORDER, arguments).json()
    assert execute(dsh, session, REORDER, arguments, approval=decision["approval"], scope="session").status_code == 200
    [covered] = reorders(url, key, None, gallery.extension, [items], revision + 1, mode="legacy")
    assert covered.is_error is False, covered.structured_content
    assert ToolCall.objects.get(surface="mcp", tool_name=REORDER).standing_grant_id == StandingGrant.objects.get().pk
    named = ToolCall.objects.filter(standing_grant__isnull=False).count()  # the opening call and the covered one
    other = extension_create(owner=world.alice, name="alice-second")
    [refused] = reorders(url, key, None, other.public_id, [["x"]], 0, mode="legacy")
    # Not covered: the call goes the way of any approval, whose card cannot name an item the
    # other gallery does not hold.
    assert_tool_error(refused, "unknown_item")
    assert ToolCall.objects.filter(standing_grant__isnull=False).count() == named
