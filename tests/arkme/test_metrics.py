"""GET /metrics: off without a token, refused with a wrong one, and counting what operators watch."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from arkme.kernel.storage import LocalObjectStore
from tests.support.errors import assert_error
from tests.support.images import png
from tests.support.mcp import Mcp, accept

TOKEN = "metrics-token-for-tests-0123456789"


@pytest.fixture
def metrics(client, settings):
    settings.ARKME_METRICS_TOKEN = TOKEN

    def scrape() -> dict[tuple[str, tuple], float]:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
        samples = {}
        for family in text_string_to_metric_families(response.content.decode()):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return samples
    return scrape


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_the_endpoint_is_off_without_a_token(client, settings, db):
    settings.ARKME_METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404


@pytest.mark.parametrize("header", ["", "Bearer wrong", f"Basic {TOKEN}", "Bearer"])
def test_a_wrong_token_is_401(client, settings, db, header):
    settings.ARKME_METRICS_TOKEN = TOKEN
    response = client.get("/metrics", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert b"arkme_" not in response.content


def test_tool_calls_approvals_operations_and_refusals_are_counted(metrics, gs, django_capture_on_commit_callbacks):
    before = metrics()
    with django_capture_on_commit_callbacks(execute=True):  # a use counts when its call commits
        _calls(gs)
    after = metrics()

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("arkme_tool_calls_total", tool="arkme_context", outcome="ok", surface="rest") == 1
    assert grew("arkme_tool_calls_total", tool="arkme_context", outcome="invalid_arguments", surface="mcp") == 1
    assert grew("arkme_tool_calls_total", tool="unknown", outcome="unknown_tool", surface="rest") == 1
    assert grew("arkme_tool_call_seconds_count", tool="arkme_context", outcome="ok", surface="rest") == 1
    assert grew("arkme_approvals_total", event="asked") == 2
    assert grew("arkme_approvals_total", event="used") == 1
    assert grew("arkme_approvals_total", event="declined") == 1
    assert grew("arkme_approvals_total", event="refused_invalid") == 1
    assert grew("arkme_images_refused_total", code="image_dimensions") == 1
    assert value(after, "arkme_gallery_operations", status="pending") == 1


def _calls(gs) -> None:
    gs.dsh.execute(gs.session, "arkme_context", {})
    Mcp(gs.dsh, gs.session).call("arkme_context", {"bogus": 1})
    gs.dsh.execute(gs.session, "arkme_made_up_tool", {})
    gs.dsh.approve_and_execute(gs.session, "arkme_id_change", {"arkme_id": "alice_metrics"})
    Mcp(gs.dsh, gs.session).call_answering("arkme_id_change", {"arkme_id": "alice_other"}, accept(approve=False))
    gs.dsh.execute(gs.session, "arkme_id_change", {"arkme_id": "alice_third"}, approval="apv_forged")
    assert_error(gs.prepare(source="workspace", workspace_paths=[gs.write("tiny.png", png((100, 100)))]), 422,
                 "image_dimensions")
    assert gs.prepare(source="workspace", workspace_paths=gs.write_many(1)).status_code == 200


def test_an_approval_use_that_rolls_back_is_not_counted(metrics, session, django_capture_on_commit_callbacks):
    from django.db import transaction

    from arkme.conversations.models import AgentSession
    from toolregistry.approvals import approval_consume, approval_issue

    agent_session = AgentSession.objects.get(public_id=session)
    before = metrics()
    with django_capture_on_commit_callbacks(execute=True):
        rolled_back = approval_issue(session=agent_session, tool_name="arkme_id_change", digest="d1")
        with pytest.raises(RuntimeError), transaction.atomic():
            approval_consume(session=agent_session, tool_name="arkme_id_change", digest="d1", token=rolled_back.token)
            raise RuntimeError("the call failed after using its approval")
        assert value(metrics(), "arkme_approvals_total", event="used") == value(before, "arkme_approvals_total",
                                                                                 event="used")
        # Still unused, so the retry uses it, and that use commits.
        approval_consume(session=agent_session, tool_name="arkme_id_change", digest="d1", token=rolled_back.token)
    assert value(metrics(), "arkme_approvals_total", event="used") == value(before, "arkme_approvals_total",
                                                                             event="used") + 1


def test_checking_whether_an_attachment_is_an_image_refuses_nothing(metrics, gs):
    """Only a refusal the service answers with is counted: the latest message's attachments
    are sniffed to find its images, and a text file among them is skipped, not refused."""
    before = metrics()
    assert gs.say("two files", files=[("notes.txt", b"plain text, not an image " * 40),
                                      ("notes.gz", b"\x1f\x8b" + b"compressed" * 40)]).status_code == 201
    refused = gs.prepare(source="attachments")
    assert_error(refused, 422, "no_captured_images")
    after = metrics()
    grew = {code: value(after, "arkme_images_refused_total", code=code)
            - value(before, "arkme_images_refused_total", code=code)
            for code in ("unsupported_format", "no_captured_images")}
    assert grew == {"unsupported_format": 0, "no_captured_images": 1}


def test_labels_never_carry_ids_or_arguments(metrics, gs):
    gs.dsh.execute(gs.session, "arkme_context", {"workspace_paths": ["secret-file.png"]})
    text = "\n".join(f"{name} {labels}" for name, labels in metrics())
    assert gs.session not in text and "secret-file" not in text and "acc_" not in text


def test_store_faults_and_task_waits_are_counted(metrics, gs, monkeypatch):
    before = metrics()
    gs.add_confirmed(gs.write_many(1))  # confirm waits on the store task
    after = metrics()
    assert value(after, "arkme_task_wait_seconds_count", end="ok") > value(before, "arkme_task_wait_seconds_count", end="ok")

    def broken(self, key, data):
        raise OSError("the disk is gone")

    prepared = gs.prepare(source="workspace", workspace_paths=gs.write_many(1, start=3)).json()["result"]
    gs.say("确认")
    monkeypatch.setattr(LocalObjectStore, "_put", broken)
    confirmed = gs.confirm(prepared["operation"])
    assert_error(confirmed, 503, "storage_unavailable")
    faulted = metrics()
    assert value(faulted, "arkme_blob_store_faults_total", operation="put_if_absent") == value(
        after, "arkme_blob_store_faults_total", operation="put_if_absent") + 1


def test_several_processes_add_up_through_the_multiprocess_folder(tmp_path):
    """Under gunicorn each worker writes its samples to PROMETHEUS_MULTIPROC_DIR; the endpoint,
    served by any of them, reports the sum."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import django, os; django.setup()\n"
        "from arkme.kernel.metrics import TOOL_CALLS, metrics_view\n"
        "TOOL_CALLS.labels('arkme_context', 'ok', 'rest').inc()\n"
        "if os.environ.get('SCRAPE'):\n"
        "    from django.test import RequestFactory\n"
        f"    request = RequestFactory().get('/metrics', HTTP_AUTHORIZATION='Bearer {TOKEN}')\n"
        "    print(metrics_view(request).content.decode())\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
           "ARKME_METRICS_TOKEN": TOKEN, "DJANGO_SECRET_KEY": "x"}
    root = Path(__file__).resolve().parents[2]
    for _ in range(2):  # two workers, each counting one call
        ran = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr[-2000:]
    out = subprocess.run([sys.executable, "-c", script], cwd=root, env={**env, "SCRAPE": "1"}, check=True,
                         capture_output=True, text=True, timeout=60).stdout
    assert 'arkme_tool_calls_total{outcome="ok",surface="rest",tool="arkme_context"} 3.0' in out
    assert list(tmp_path.glob("counter_*.db"))


def test_a_refusal_is_counted_where_it_leaves_not_where_it_is_made(metrics, dsh, session):
    """A declined MCP approval answered twice: the second decline spends nothing and refuses
    nobody (the approval was void already), so no refusal is counted; a yes on that state is
    refused to its caller, and counted once."""
    mcp = Mcp(dsh, session)
    first = mcp.call("arkme_id_change", {"arkme_id": "alice_counted"})
    [key] = first["inputRequests"]
    no = {key: {"action": "decline"}}
    mcp.call("arkme_id_change", {"arkme_id": "alice_counted"}, request_state=first["requestState"], input_responses=no)
    before = metrics()
    mcp.call("arkme_id_change", {"arkme_id": "alice_counted"}, request_state=first["requestState"], input_responses=no)
    between = metrics()
    assert value(between, "arkme_approvals_total", event="refused_used") == value(before, "arkme_approvals_total",
                                                                                   event="refused_used")
    assert value(between, "arkme_approvals_total", event="declined") == value(
        before, "arkme_approvals_total", event="declined") + 1
    yes = {key: {"action": "accept", "content": {"approve": True}}}
    mcp.call("arkme_id_change", {"arkme_id": "alice_counted"}, request_state=first["requestState"], input_responses=yes)
    after = metrics()
    assert value(after, "arkme_approvals_total", event="refused_used") == value(between, "arkme_approvals_total",
                                                                                event="refused_used") + 1
