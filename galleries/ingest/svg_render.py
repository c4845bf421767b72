"""Render a sanitised SVG to PNG in a separate process with a hard wall-clock timeout and an
address-space limit: cairosvg can spin for minutes, or allocate without bound, on a tiny
input (a circle of radius 1e30), and neither may take a web or worker process with it.

Each process keeps a small pool of render processes (``galleries.ingest.svg_render_worker``,
``ARKME_SVG_RENDER_PROCESSES`` of them), each started on first use:
it runs under its own address-space limit, is killed when a render passes its deadline, is
replaced after any failure, and is recycled after ``RECYCLE_AFTER`` renders. A render process
that lives on keeps cairosvg's caches warm; one per render would start cold each time.

Renders are costly and an agent chooses what to render, so one account holds at most
``ARKME_SVG_RENDERS_PER_ACCOUNT`` of them at once, over every web process and node
(``arkme.kernel.slots``); a prepare past that is refused at once (429 ``throttled``) instead of
queueing in front of other accounts' work. A render also ends when its caller stops waiting:
queued, its task expires (``arkme.kernel.tasking``); running, it is killed at the caller's
deadline, so no render process works for a caller that already has its 503.

No cheap bound of a render's cost was found to check first: cairo's time follows the dash
segments it draws, which depend on path lengths, transforms and the output size (rings of
0.02-unit dashes: 2.9 s at 1000 px, 0.14 s at 100 px), so a low-resolution trial render says
nothing sound about the full one.
"""
from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from celery import Task, shared_task
from django.conf import settings

from arkme.kernel.budget import remaining
from arkme.kernel.errors import ContentRejected, ErrorCode, QueueUnavailable, Throttled
from arkme.kernel.slots import slot
from arkme.kernel.tasking import deadline_left, run_and_wait, task_answer

from .svg_render_worker import OK, READY, REQUEST, RESPONSE, read_exact

logger = logging.getLogger(__name__)
RECYCLE_AFTER = 200
START_TIMEOUT_SECONDS = 30.0
# The project root, so that ``python -m`` finds the worker module from any working directory.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class RenderFailed(ContentRejected):
    code = ErrorCode.SVG_RENDER_FAILED
    default_message = "The SVG could not be rendered within the time and memory allowed."


class _Overran(Exception):
    """A render passed its deadline (the input's, or its caller's) and its process was killed."""


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:  # the render process is always started with both pipes
        raise RenderFailed()
    return stream


class _Renderer:
    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.owner_pid = 0
        self.memory = 0
        self.renders = 0
        self.lock = threading.Lock()

    def _ensure(self, memory: int) -> subprocess.Popen[bytes]:
        stale = (self.process is None or self.process.poll() is not None or self.owner_pid != os.getpid()
                 or self.memory != memory or self.renders >= RECYCLE_AFTER)
        if stale:
            if self.owner_pid == os.getpid():
                self._discard()
            # A forked process (a Celery prefork child) starts its own, never shares its parent's.
            process = self.process = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
                [sys.executable, "-m", "galleries.ingest.svg_render_worker", str(memory)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, cwd=PROJECT_ROOT,
            )
            self.owner_pid, self.memory, self.renders = os.getpid(), memory, 0
            try:
                ready = read_exact(_pipe(process.stdout).fileno(), len(READY), time.monotonic() + START_TIMEOUT_SECONDS)
            except (TimeoutError, EOFError, OSError):
                ready = b""
            if ready != READY:
                self._discard()
                raise RenderFailed("The SVG renderer could not start.")
            return process
        assert self.process is not None  # noqa: S101 - not stale means there is one
        return self.process

    def _discard(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def render(self, svg: bytes, width: int, height: int, timeout: float, memory: int) -> bytes:
        with self.lock:
            process = self._ensure(memory)
            self.renders += 1
            # The deadline counts from the request; a fresh process's start-up is not the input's fault.
            deadline = time.monotonic() + timeout
            try:
                stdin = _pipe(process.stdin)
                stdin.write(REQUEST.pack(width, height, len(svg)) + svg)
                stdin.flush()
                fd = _pipe(process.stdout).fileno()
                status, length = RESPONSE.unpack(read_exact(fd, RESPONSE.size, deadline))
                png = read_exact(fd, length, deadline)
            except TimeoutError:
                self._discard()
                raise _Overran() from None
            except (OSError, EOFError):
                self._discard()
                raise RenderFailed() from None
            if status != OK:
                self._discard()
                raise RenderFailed()
            return png


class _Pool:
    """A few render processes, so one hostile SVG running to its deadline holds up one slot,
    not every render in this process. Each slot is one render process, used by one render at
    a time; a render waits for a free slot."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.renderers: list[_Renderer] = []
        self.free: queue.Queue[_Renderer] = queue.Queue()

    def _grow_to(self, size: int) -> None:
        with self.lock:
            while len(self.renderers) < size:
                renderer = _Renderer()
                self.renderers.append(renderer)
                self.free.put(renderer)

    def render(self, svg: bytes, width: int, height: int, timeout: float, memory: int,
               caller_deadline: float | None = None) -> bytes:
        self._grow_to(settings.ARKME_SVG_RENDER_PROCESSES)
        try:
            renderer = self.free.get(timeout=None if caller_deadline is None
                                     else max(0.0, caller_deadline - time.monotonic()))
        except queue.Empty:
            raise _Overran() from None
        try:
            if caller_deadline is not None:
                timeout = min(timeout, caller_deadline - time.monotonic())
            return renderer.render(svg, width, height, timeout, memory)
        finally:
            self.free.put(renderer)


_pool = _Pool()


def render_png(svg: bytes, width: int, height: int, *, timeout: float | None = None,
               memory: int | None = None, caller_left: float | None = None) -> bytes:
    """PNG bytes of ``svg`` at ``width``×``height``, or ``RenderFailed``. ``caller_left``: the
    seconds until the caller stops waiting; a render still running then is killed, and that is
    the queue's 503, not the input's fault."""
    if caller_left is not None and caller_left <= 0:
        raise QueueUnavailable("The request's time ran out before the render could start; try again.")
    caller_deadline = None if caller_left is None else time.monotonic() + caller_left
    try:
        return _pool.render(svg, width, height,
                            settings.ARKME_SVG_TIMEOUT_SECONDS if timeout is None else timeout,
                            settings.ARKME_SVG_MEMORY_BYTES if memory is None else memory, caller_deadline)
    except _Overran:
        if caller_deadline is not None and time.monotonic() >= caller_deadline:
            logger.warning("an SVG render was stopped: its caller stopped waiting")
            raise QueueUnavailable("The render did not finish before the request's time ran out; try again.") from None
        raise RenderFailed("The SVG took too long to render.") from None


def _render_text(svg: str, width: int, height: int, caller_left: float | None) -> bytes:
    return render_png(svg.encode("utf-8"), width, height, caller_left=caller_left)


@shared_task(name="galleries.render_svg", acks_late=True, bind=True)
def render_svg(self: Task, svg: str, width: int, height: int) -> dict[str, object]:
    """The render as a task: a worker's crash or a hung render costs a render process only.

    The PNG comes back as bytes (results are msgpack). The task's ``expires`` is its caller's
    deadline: the render stops there."""
    return task_answer(_render_text, svg, width, height, deadline_left(self))


def render_png_via_task(svg: bytes, width: int, height: int, *, account: int | None = None) -> bytes:
    """Render on a worker (or in-process without a broker) and wait for the PNG. ``account``:
    whose render this is, held to ``ARKME_SVG_RENDERS_PER_ACCOUNT`` in flight (``Throttled``
    past it); None for an operator's own (a command, the demo), which is not capped."""
    if account is None:
        return _render_waited(svg, width, height)
    # The slot outlives any render it covers: a holder killed mid-wait frees it by expiry.
    lease = max(settings.ARKME_TASK_WAIT_SECONDS, settings.ARKME_SVG_TIMEOUT_SECONDS) + 5
    limit = settings.ARKME_SVG_RENDERS_PER_ACCOUNT
    with slot("svg-render", account, limit=limit, lease_seconds=lease) as held:
        if not held:
            logger.info("an SVG render was refused: account %s has %s in flight", account, limit)
            raise Throttled(f"This account already has {limit} SVG renders in flight; retry shortly.",
                            retry_after_seconds=settings.ARKME_SVG_TIMEOUT_SECONDS,
                            details={"renders_in_flight": limit})
        return _render_waited(svg, width, height)


def _render_waited(svg: bytes, width: int, height: int) -> bytes:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # In-process, the task would only wrap the same call in Celery's bookkeeping; the
        # request's budget still bounds the render.
        return render_png(svg, width, height, caller_left=remaining(settings.ARKME_TASK_WAIT_SECONDS))
    png: bytes = run_and_wait(render_svg, svg.decode("utf-8"), width, height)
    return png
