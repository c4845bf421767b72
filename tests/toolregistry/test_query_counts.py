"""Statements per call do not grow with the data a call touches (no N+1)."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from arkme.accounts.models import Account
from galleries.services.extensions import extension_create
from groups.models import JoinPolicy
from groups.services import private_chat_ensure


def statements(call) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, response.content
    return len(queries), response


def context_statements(dsh, session, account, extensions: int, gs) -> int:
    for number in range(extensions):
        extension_create(owner=account, name=f"extra-{number}")
    count, response = statements(lambda: dsh.execute(session, "arkme_context", {}))
    assert len(response.json()["result"]["extensions"]) == extensions + 1
    return count


def test_arkme_context_runs_the_same_statements_for_1_and_50_extensions(dsh, world, gs, db):
    # Alice's own extension has two items, so item reads are part of what is counted.
    gs.add_confirmed(gs.write_many(2))
    few = context_statements(dsh, gs.session, world.alice, 0, gs)
    many = context_statements(dsh, gs.session, world.alice, 49, gs)
    assert few == many


def _people(world, count: int) -> list[Account]:
    people = [Account.objects.create(display_name=f"Person {n}") for n in range(count)]
    for person in people:
        private_chat_ensure(a=world.alice, b=person)
    return people


@pytest.mark.parametrize("policy", [JoinPolicy.OPEN, JoinPolicy.APPROVAL])
def test_member_add_and_its_card_run_the_same_statements_for_1_and_20_refs(dsh, session, refs, world, policy,
                                                                            django_capture_on_commit_callbacks):
    group = "open-group" if policy == JoinPolicy.OPEN else "approval-group"
    _people(world, 21)
    found = dsh.execute(session, "arkme_group_member_candidates",
                        {"source_ref": refs[group], "limit": 100}).json()["result"]["candidates"]
    candidate_refs = [c["candidate_ref"] for c in found if c["display_name"].startswith("Person")]
    counts = {}
    for size, chosen in (("one", candidate_refs[:1]), ("twenty", candidate_refs[1:21])):
        arguments = {"source_ref": refs[group], "candidate_refs": chosen}
        card, decision = statements(lambda a=arguments: dsh.pre_execute(session, "arkme_group_member_add", a))
        with django_capture_on_commit_callbacks(execute=False):
            run, response = statements(lambda a=arguments, d=decision: dsh.execute(
                session, "arkme_group_member_add", a, approval=d.json()["approval"]))
        outcomes = {r["outcome"] for r in response.json()["result"]["results"]}
        assert outcomes == {"added" if policy == JoinPolicy.OPEN else "invited"}
        counts[size] = (card, run)
    assert counts["one"] == counts["twenty"]



def test_confirm_runs_the_same_statements_for_each_image_from_1_to_20(dsh, world, gs, db):
    """Statements grow by the same number for every image a confirm stores: nothing is read
    again per image that one statement could read for all."""
    counts = {}
    for images in (1, 2, 20):
        gs.extension = extension_create(owner=world.alice, name=f"confirm-{images}").public_id
        paths = gs.write_many(images, start=100 * images)
        operation = gs.prepare(source="workspace", workspace_paths=paths).json()["result"]["operation"]
        gs.say("确认")
        counts[images], response = statements(lambda o=operation: gs.confirm(o))
        assert response.json()["result"]["added"] == images
    per_image = counts[2] - counts[1]
    assert counts[20] - counts[1] == 19 * per_image


def test_the_session_view_reads_the_key_and_the_session_in_one_statement(dsh, session):
    from rest_framework.test import APIClient

    api = APIClient()  # not the recording client, whose leak scan reads the database too
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
    fresh, _ = statements(lambda: api.get(f"/dsh/v1/sessions/{session}"))
    assert fresh == 1
    from datetime import timedelta

    from django.utils import timezone

    from arkme.conversations.models import AgentSession

    seen = timezone.now() - timedelta(seconds=61)
    AgentSession.objects.filter(public_id=session).update(last_seen_at=seen)
    stale, _ = statements(lambda: api.get(f"/dsh/v1/sessions/{session}"))
    assert stale == 2  # and the touch
    assert AgentSession.objects.get(public_id=session).last_seen_at > seen


def test_arkme_context_reads_each_part_in_one_statement(dsh, world, gs):
    """The session (with the key), the account, the extensions with their galleries and items,
    the groups, the audit row: five statements for any number of extensions and images."""
    from rest_framework.test import APIClient

    gs.add_confirmed(gs.write_many(2))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {dsh.key}")
    count, response = statements(lambda: api.post(f"/dsh/v1/sessions/{gs.session}/tools/arkme_context/execute",
                                                  {"arguments": {}}, format="json"))
    assert count == 5
    items = response.json()["result"]["extensions"][0]["gallery"]["items"]
    assert [item["position"] for item in items] == [1, 2]
