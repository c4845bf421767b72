"""Running a Celery task and waiting for its answer, the same way in-process and on a broker.

Tasks return ``{"ok": ...}`` or ``{"error": envelope, "status": n}`` instead of raising domain
errors, because a JSON result cannot carry an exception's code and details.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from celery import Task
from celery.exceptions import TimeLimitExceeded
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult, EagerResult
from django.conf import settings
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


def enqueue(task: Task, *args: Any) -> AsyncResult | EagerResult:
    """Send a task; an unreachable broker is a 503, never a half-done request."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return task.apply(args=args)
    try:
        return task.apply_async(args=args, retry=False)
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
    started, end = time.monotonic(), "failed"
    try:
        answer = result.get(timeout=allowed, propagate=True, disable_sync_subtasks=False)
        end = "ok"
    except (CeleryTimeout, TimeLimitExceeded) as exc:
        # TimeLimitExceeded: the worker stopped the task at CELERY_TASK_TIME_LIMIT.
        end = "timeout"
        logger.warning("task %s did not finish within %ss", getattr(result, "id", "?"), timeout)
        raise QueueUnavailable("The task did not finish in time; try again.") from exc
    except (OperationalError, OSError, RuntimeError) as exc:
        end = "unavailable"
        logger.warning("result backend unavailable: %s", type(exc).__name__)
        raise QueueUnavailable() from exc
    finally:
        TASK_WAIT.labels(end).observe(time.monotonic() - started)
    return _unwrap(answer)


def run_and_wait(task: Task, *args: Any, timeout: float | None = None) -> Any:
    return wait(enqueue(task, *args), timeout=timeout or settings.ARKME_TASK_WAIT_SECONDS)
