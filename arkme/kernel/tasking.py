"""Running a Celery task and waiting for its answer, the same way in-process and on a broker.

Tasks return ``{"ok": ...}`` or ``{"error": envelope, "status": n}`` instead of raising domain
errors, because a JSON result cannot carry an exception's code and details.

A task someone waits for carries its caller's deadline as Celery's ``expires``: a worker that
takes it after the caller gave up discards it (marking it revoked) instead of running it for
nobody, and a long task reads the deadline to stop when its caller stops waiting
(``deadline_left``). Background tasks (delivery, housekeeping) are sent without one.
"""
from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any, Callable, Sequence

from celery import Task
from celery.exceptions import TaskRevokedError, TimeLimitExceeded
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult, EagerResult
from django.conf import settings
from django.db import connection
from kombu.exceptions import OperationalError

from .budget import remaining
from .errors import ArkmeError, QueueUnavailable, error_from_answer
from .metrics import TASK_WAIT

logger = logging.getLogger(__name__)


def task_answer(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Inside a task: run ``fn`` and turn a domain error into a JSON answer."""
    try:
        return {"ok": fn(*args, **kwargs)}
    except ArkmeError as error:
        return {"error": error.as_error(), "status": error.http_status}


def _unwrap(answer: dict[str, Any]) -> Any:
    if "error" in answer:
        raise error_from_answer(answer["error"], int(answer.get("status", 422)))
    return answer["ok"]


def enqueue(task: Task, *args: Any, expires: float | None = None) -> AsyncResult | EagerResult:
    """Send a task; an unreachable broker is a 503, never a half-done request.

    ``expires``: the seconds its caller will wait for it; a worker that takes it later discards
    it. None for work nobody waits for (it runs whenever a worker is free)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return task.apply(args=args)
    try:
        if expires is None:
            return task.apply_async(args=args, retry=False)
        return task.apply_async(args=args, retry=False, expires=expires)
    except (OperationalError, OSError, RuntimeError) as exc:
        # RuntimeError: Celery's Redis result store gave up reconnecting (its retry policy).
        logger.warning("broker unavailable: %s", exc)
        raise QueueUnavailable() from exc


def wait(result: AsyncResult | EagerResult, *, timeout: float) -> Any:
    """The task's answer, waiting at most ``timeout`` and never past the request's budget."""
    allowed = remaining(timeout)
    if allowed <= 0:
        logger.warning("the request's wait budget is spent; task %s is not waited for", getattr(result, "id", "?"))
        raise QueueUnavailable("The task queue is slow; try again.")
    if not isinstance(result, EagerResult) and not connection.in_atomic_block:
        # The wait can last seconds: give the database connection back (to the pool on
        # PostgreSQL) rather than hold it idle, so requests waiting on renders cannot take every
        # connection of the process from the requests that need one now. Inside a transaction
        # the connection is the transaction's and stays.
        connection.close()
    started, end = time.monotonic(), "failed"
    try:
        answer = result.get(timeout=allowed, propagate=True, disable_sync_subtasks=False)
        end = "ok"
    except (CeleryTimeout, TimeLimitExceeded) as exc:
        # TimeLimitExceeded: the worker stopped the task at CELERY_TASK_TIME_LIMIT.
        end = "timeout"
        logger.warning("task %s did not finish within %ss", getattr(result, "id", "?"), timeout)
        raise QueueUnavailable("The task did not finish in time; try again.") from exc
    except TaskRevokedError as exc:
        # A worker took it past its ``expires``: the caller had given up, or is about to.
        end = "timeout"
        logger.warning("task %s expired before a worker took it", getattr(result, "id", "?"))
        raise QueueUnavailable("The task queue is slow; try again.") from exc
    except (OperationalError, OSError, RuntimeError) as exc:
        end = "unavailable"
        logger.warning("result backend unavailable: %s", type(exc).__name__)
        raise QueueUnavailable() from exc
    finally:
        TASK_WAIT.labels(end).observe(time.monotonic() - started)
    return _unwrap(answer)


def run_all_and_wait(task: Task, calls: Sequence[Sequence[Any]], *, timeout: float | None = None) -> list[Any]:
    """Send one task per argument list and wait for every answer, all within one deadline:
    ``timeout`` (the task wait setting by default), cut to what the request has left. Each task
    expires at that deadline, so none runs after its caller stopped waiting."""
    allowed = remaining(timeout or settings.ARKME_TASK_WAIT_SECONDS)
    if allowed <= 0:
        logger.warning("the request's wait budget is spent; %s is not sent", task.name)
        raise QueueUnavailable("The task queue is slow; try again.")
    end = time.monotonic() + allowed
    pending = [enqueue(task, *args, expires=allowed) for args in calls]
    return [wait(result, timeout=end - time.monotonic()) for result in pending]


def run_and_wait(task: Task, *args: Any, timeout: float | None = None) -> Any:
    return run_all_and_wait(task, [args], timeout=timeout)[0]


def deadline_left(task: Task) -> float | None:
    """Inside a running task: the seconds until its caller stops waiting (its ``expires``), or
    None for a task nobody waits for (or one run in-process)."""
    expires = getattr(task.request, "expires", None)
    if not expires:
        return None
    if isinstance(expires, str):
        expires = datetime.fromisoformat(expires)
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    return (expires - datetime.now(UTC)).total_seconds()
