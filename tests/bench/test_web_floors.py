"""The web figures' floors answer what the product answers and write what it writes.

A floor that did less than the product's path would flatter the product's CPU ratio; these
tests keep them honest. No timing is asserted here.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from arkme.conversations.models import AgentSession
from galleries.models import Blob, GalleryItem
from groups.refs import read_source_ref
from toolregistry.models import IdempotencyRecord, IdempotencyStatus, ToolCall


@pytest.fixture
def bench_urls(settings):
    settings.ROOT_URLCONF = "bench.urls"
    settings.MIDDLEWARE = ["bench.middleware.floors", *settings.MIDDLEWARE]


def test_the_session_floor_answers_the_session_view(bench_urls, dsh, session):
    product, floor = dsh.get(f"sessions/{session}"), dsh.api.get(f"/bench/floor/session/{session}")
    assert product.status_code == floor.status_code == 200
    assert floor.content == product.content
    assert floor["ETag"] == product["ETag"]
    etag = product["ETag"]
    for header in (etag, f"W/{etag}", f'"a", {etag}', "*", '"other"', f"W/{etag}x"):
        again = {"HTTP_IF_NONE_MATCH": header}
        assert (dsh.get(f"sessions/{session}", **again).status_code
                == dsh.api.get(f"/bench/floor/session/{session}", **again).status_code), header


@pytest.mark.parametrize("path", ["/dsh/v1/sessions/{}", "/bench/floor/session/{}"])
def test_both_write_the_touch_of_a_stale_session(bench_urls, dsh, session, path):
    seen = timezone.now() - timedelta(seconds=61)
    AgentSession.objects.filter(public_id=session).update(last_seen_at=seen)
    assert dsh.api.get(path.format(session)).status_code == 200
    assert AgentSession.objects.get(public_id=session).last_seen_at > seen


def test_the_session_floor_reads_only_the_callers_session(bench_urls, other_dsh, session):
    assert other_dsh.api.get(f"/bench/floor/session/{session}").status_code == 404


def test_the_session_floor_refuses_a_closed_session(bench_urls, dsh, session):
    AgentSession.objects.filter(public_id=session).update(closed_at=timezone.now())
    assert dsh.api.get(f"/bench/floor/session/{session}").status_code == 404


def _context(body, account):
    """The result with each source ref read back to its group (refs carry a timestamp)."""
    result = body["result"]
    groups = [{"name": g["name"], "group": read_source_ref(g["source_ref"], account_public_id=account.public_id)}
              for g in result["groups"]]
    return {**result, "groups": groups}


@pytest.mark.parametrize("keyed", [False, True])
def test_the_context_floor_answers_and_writes_what_execute_does(bench_urls, dsh, session, world, keyed):
    blobs = Blob.objects.bulk_create([Blob(sha256=f"{i:064x}", size=10 + i, width=4, height=3, format="png")
                                      for i in range(3)])
    GalleryItem.objects.bulk_create([GalleryItem(gallery=world.alice_ext.gallery, blob=b, position=3 - i)
                                     for i, b in enumerate(blobs)])
    calls, records = ToolCall.objects.count(), IdempotencyRecord.objects.count()
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-product"} if keyed else {}
    product = dsh.execute(session, "arkme_context", {}, **headers)
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-floor"} if keyed else {}
    floor = dsh.api.post(f"/bench/floor/{session}/context", {"arguments": {}}, format="json", **headers)
    assert product.status_code == floor.status_code == 200
    assert _context(floor.json(), world.alice) == _context(product.json(), world.alice)
    assert len(product.json()["result"]["extensions"][0]["gallery"]["items"]) == 3
    rows = ToolCall.objects.order_by("-id")[:2]
    assert ToolCall.objects.count() == calls + 2
    assert {(r.tool_name, r.tool_id, r.outcome, r.http_status) for r in rows} == {
        ("arkme_context", "arkme.context@1", "ok", 200)}
    assert IdempotencyRecord.objects.count() == records + (2 if keyed else 0)
    if keyed:
        kept = {r.key: r for r in IdempotencyRecord.objects.filter(key__in=["k-product", "k-floor"])}
        assert {r.status for r in kept.values()} == {IdempotencyStatus.COMPLETE}
        assert kept["k-product"].request_digest == kept["k-floor"].request_digest
        assert _context(kept["k-floor"].response_body, world.alice) == _context(
            kept["k-product"].response_body, world.alice)


def test_the_context_floor_refuses_bad_arguments_and_strangers(bench_urls, dsh, other_dsh, session):
    assert dsh.api.post(f"/bench/floor/{session}/context", {"arguments": {"x": 1}}, format="json").status_code == 400
    assert other_dsh.api.post(f"/bench/floor/{session}/context", {"arguments": {}},
                              format="json").status_code == 404
