"""Fixtures for the groups tools: candidates and additions as alice's agent calls them."""
from __future__ import annotations

import pytest


@pytest.fixture
def candidates(dsh, session, refs):
    def fetch(group: str, **kw):
        response = dsh.execute(session, "arkme_group_member_candidates", {"source_ref": refs[group], **kw})
        assert response.status_code == 200, response.content
        return response.json()["result"]
    return fetch


@pytest.fixture
def add(dsh, session, refs):
    def run(group: str, candidate_refs: list[str]):
        return dsh.approve_and_execute(session, "arkme_group_member_add",
                                       {"source_ref": refs[group], "candidate_refs": candidate_refs})
    return run


def ref_of(candidates, group, name):
    return next(c["candidate_ref"] for c in candidates(group)["candidates"] if c["display_name"] == name)
