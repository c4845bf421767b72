"""The leak scanner itself: each kind of leak is caught, handles and static texts are not."""
from __future__ import annotations

import pytest

from tests.support.leaks import find_leaks

SHA = "a" * 64


@pytest.mark.parametrize("body", [
    {"result": {"x": SHA}},
    {"result": {"key": f"blobs/aa/{SHA[:10]}"}},
    {"error": {"details": {"path": "captured/ses_1/3/1"}}},
    {"result": {"url": "https://bucket.s3.amazonaws.com/x"}},
    {"result": {"u": "x?X-Amz-Signature=abc"}},
    {"result": {"data": "iVBORw0KGgo" + "A" * 120}},
    {"error": {"message": "Traceback (most recent call last): ..."}},
])
def test_each_leak_is_found(body):
    assert find_leaks(body)


def test_declared_secrets_are_found():
    assert find_leaks({"result": {"question": "add holiday/gps.png?"}}, ["holiday/gps.png"])


def test_handles_and_static_texts_are_not_flagged():
    ref = "eyJnIjoiZ3JwX3gifQ:" + "x" * 120
    body = {"result": {"groups": [{"source_ref": ref}]}, "tools": [{"description": "see https://example.com"}]}
    assert find_leaks(body) == []


def test_account_ids_inside_signed_refs_are_found():
    from django.core import signing
    bad = signing.dumps({"c": "chat_x", "u": "acc_abcdefghij0123456789"}, salt="x")
    assert find_leaks({"result": {"candidates": [{"candidate_ref": bad}]}})
    raw_pk = signing.dumps({"g": "grp_x", "owner": 42}, salt="x")
    assert find_leaks({"result": {"source_ref": raw_pk}}, account_ids=["42"])
    good = signing.dumps({"g": "grp_abc"}, salt="x")
    assert find_leaks({"result": {"source_ref": good}}, account_ids=["1", "2"]) == []
