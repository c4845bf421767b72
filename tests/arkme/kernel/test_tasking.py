"""Tasks someone waits for carry the caller's deadline; background tasks carry none; each kind of
task has its own queue."""
from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from celery.exceptions import TaskRevokedError

from arkme.kernel import budget
from arkme.kernel.errors import QueueUnavailable
from arkme.kernel.tasking import deadline_left, enqueue, run_all_and_wait, run_and_wait, wait
from config.celery import app


class Answered:
    id = "t"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def get(self, **kwargs: Any) -> Any:
        return self.answer


class Sent:
    """A task on a broker: records how each call was sent."""

    name = "sent"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def apply_async(self, args: tuple, **options: Any) -> Answered:
        self.sent.append({"args": args, **options})
        return Answered({"ok": list(args)})


@pytest.fixture
def on_a_broker(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False


@pytest.fixture
def request_budget():
    """Inside a request with ``seconds`` of its budget left."""
    tokens = []

    def left(seconds: float) -> None:
        tokens.append(budget._deadline.set(time.monotonic() + seconds))

    yield left
    for token in reversed(tokens):
        budget._deadline.reset(token)


def test_a_waited_task_expires_when_its_caller_stops_waiting(on_a_broker, settings, request_budget):
    settings.ARKME_TASK_WAIT_SECONDS = 20
    task = Sent()
    assert run_and_wait(task, "a") == ["a"]  # outside a request: the wait setting
    assert 19 < task.sent[-1]["expires"] <= 20
    request_budget(3)
    run_and_wait(task, "b")  # inside one: what its budget has left
    assert 2 < task.sent[-1]["expires"] <= 3


def test_tasks_sent_together_share_one_deadline(on_a_broker, request_budget):
    request_budget(4)
    task = Sent()
    assert run_all_and_wait(task, [("a",), ("b",)], timeout=10) == [["a"], ["b"]]
    assert [call["args"] for call in task.sent] == [("a",), ("b",)]
    assert all(3 < call["expires"] <= 4 for call in task.sent)


def test_a_spent_budget_sends_nothing(on_a_broker, request_budget):
    request_budget(-1)
    task = Sent()
    with pytest.raises(QueueUnavailable):
        run_and_wait(task, "a")
    assert task.sent == []


def test_background_work_carries_no_deadline(on_a_broker, request_budget):
    request_budget(3)
    task = Sent()
    enqueue(task, [1, 2])  # invitation delivery: nobody waits for it
    assert "expires" not in task.sent[-1]


def test_a_task_a_worker_discarded_as_expired_is_the_queues_503():
    class Expired:
        id = "t"

        def get(self, **kwargs: Any) -> Any:
            raise TaskRevokedError("expired")

    with pytest.raises(QueueUnavailable) as raised:
        wait(Expired(), timeout=5)  # type: ignore[arg-type]
    assert raised.value.http_status == 503 and raised.value.code == "task_queue_unavailable"


def test_a_running_task_knows_its_callers_deadline():
    def task(expires: Any) -> Any:
        return SimpleNamespace(request=SimpleNamespace(expires=expires))

    soon = datetime.now(UTC) + timedelta(seconds=5)
    assert 4 < deadline_left(task(soon.isoformat())) <= 5  # type: ignore[operator,arg-type]  # as a message carries it
    assert 4 < deadline_left(task(soon)) <= 5  # type: ignore[operator,arg-type]
    assert deadline_left(task(datetime.now(UTC) - timedelta(seconds=1))) < 0  # type: ignore[operator,arg-type]
    assert deadline_left(task(None)) is None  # type: ignore[arg-type]  # background, or in-process


@pytest.mark.parametrize(("name", "queue"), [
    ("galleries.render_svg", "render"),
    ("galleries.store_blobs", "blobs"),
    ("galleries.store_blob", "blobs"),
    ("groups.deliver_messages", "celery"),
    ("groups.redeliver_messages", "celery"),
    ("galleries.expire_operations", "celery"),
])
def test_renders_and_stores_have_queues_of_their_own(name, queue):
    assert app.amqp.router.route({}, name)["queue"].name == queue


def test_a_worker_started_without_queues_consumes_them_all():
    # The Procfile splits them; one `celery worker` for everything still runs every task.
    assert set(app.amqp.queues) == {"celery", "blobs", "render"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("in_transaction", [False, True])
def test_a_request_waiting_on_a_task_gives_its_connection_back_outside_a_transaction(monkeypatch, in_transaction):
    """(Django keeps an in-memory SQLite connection open whatever ``close`` says: the call is
    what is checked.)"""
    from django.db import connection, transaction

    events: list[str] = []
    monkeypatch.setattr(connection, "close", lambda: events.append("close"))

    class Pending(SimpleNamespace):
        def get(self, **options: Any) -> dict:
            events.append("wait")
            return {"ok": 1}

    with transaction.atomic() if in_transaction else contextlib.nullcontext():
        assert wait(Pending(id="t"), timeout=5) == 1  # type: ignore[arg-type]
    assert events == (["wait"] if in_transaction else ["close", "wait"])
