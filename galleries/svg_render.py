"""Render a sanitised SVG to PNG in a separate process with a hard wall-clock timeout and an
address-space limit: cairosvg can spin for minutes, or allocate without bound, on a tiny
input (a circle of radius 1e30), and neither may take a web or worker process with it.

Each process keeps one render process (``galleries.svg_renderer``), started on first use:
it runs under its own address-space limit, is killed when a render passes its deadline, is
replaced after any failure, and is recycled after ``RECYCLE_AFTER`` renders. A render process
that lives on keeps cairosvg's caches warm; one per render would start cold each time.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from arkme.errors import ContentRejected

from .svg_renderer import OK, READY, REQUEST, RESPONSE, read_exact

RENDER_TIMEOUT_SECONDS = float(os.environ.get("ARKME_SVG_TIMEOUT_SECONDS", "10"))
RENDER_MEMORY_BYTES = int(os.environ.get("ARKME_SVG_MEMORY_BYTES", str(512 * 1024 * 1024)))
RECYCLE_AFTER = 200
START_TIMEOUT_SECONDS = 30.0


class RenderFailed(ContentRejected):
    code = "svg_render_failed"
    default_message = "The SVG could not be rendered within the time and memory allowed."


class _Renderer:
    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.owner_pid = 0
        self.memory = 0
        self.renders = 0
        self.lock = threading.Lock()

    def _ensure(self, memory: int) -> subprocess.Popen:
        stale = (self.process is None or self.process.poll() is not None or self.owner_pid != os.getpid()
                 or self.memory != memory or self.renders >= RECYCLE_AFTER)
        if stale:
            if self.owner_pid == os.getpid():
                self._discard()
            # A forked process (a Celery prefork child) starts its own, never shares its parent's.
            self.process = subprocess.Popen(
                [sys.executable, "-m", "galleries.svg_renderer", str(memory)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            )
            self.owner_pid, self.memory, self.renders = os.getpid(), memory, 0
            try:
                ready = read_exact(self.process.stdout.fileno(), len(READY), time.monotonic() + START_TIMEOUT_SECONDS)
            except (TimeoutError, EOFError, OSError):
                ready = b""
            if ready != READY:
                self._discard()
                raise RenderFailed("The SVG renderer could not start.")
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
                process.stdin.write(REQUEST.pack(width, height, len(svg)) + svg)
                process.stdin.flush()
                fd = process.stdout.fileno()
                status, length = RESPONSE.unpack(read_exact(fd, RESPONSE.size, deadline))
                png = read_exact(fd, length, deadline)
            except TimeoutError:
                self._discard()
                raise RenderFailed("The SVG took too long to render.") from None
            except (OSError, EOFError):
                self._discard()
                raise RenderFailed() from None
            if status != OK:
                self._discard()
                raise RenderFailed()
            return png


_renderer = _Renderer()


def render_png(svg: bytes, width: int, height: int, *, timeout: float | None = None,
               memory: int | None = None) -> bytes:
    """PNG bytes of ``svg`` at ``width``×``height``, or ``RenderFailed``."""
    return _renderer.render(svg, width, height,
                            RENDER_TIMEOUT_SECONDS if timeout is None else timeout,
                            RENDER_MEMORY_BYTES if memory is None else memory)
