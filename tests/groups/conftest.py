from __future__ import annotations

import pytest


@pytest.fixture
def candidates(dsh, alice_session, refs):
    def fetch(group: str, **kw):
        response = dsh.execute(alice_session, "arkme_group_member_candidates", {"source_ref": refs[group], **kw})
        assert response.status_code == 200, response.content
        return response.json()["result"]
    return fetch


@pytest.fixture
def add(dsh, alice_session, refs):
    def run(group: str, candidate_refs: list[str]):
        return dsh.approve_and_execute(alice_session, "arkme_group_member_add",
                                       {"source_ref": refs[group], "candidate_refs": candidate_refs})
    return run
