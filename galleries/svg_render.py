"""Render a sanitised SVG to PNG in a forked child with a hard wall-clock timeout and an
address-space limit: cairosvg can spin for minutes, or allocate without bound, on a tiny
input (a circle of radius 1e30), and neither may take the worker down with it.

``os.fork`` rather than multiprocessing: Celery's prefork workers are daemonic and may
not start multiprocessing children, and a fork costs far less than a new interpreter.
"""
from __future__ import annotations

import os
import resource
import select
import signal
import struct
import time

import cairosvg

from arkme.errors import ContentRejected

RENDER_TIMEOUT_SECONDS = float(os.environ.get("ARKME_SVG_TIMEOUT_SECONDS", "10"))
# Headroom above what the process has mapped when it forks.
RENDER_MEMORY_BYTES = int(os.environ.get("ARKME_SVG_MEMORY_BYTES", str(512 * 1024 * 1024)))
_HEADER = struct.Struct("!BQ")  # status, length


class RenderFailed(ContentRejected):
    code = "svg_render_failed"
    default_message = "The SVG could not be rendered within the time and memory allowed."


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _child(write_fd: int, svg: bytes, width: int, height: int, memory: int) -> None:
    status, payload = 1, b""
    try:
        limit = _mapped_bytes() + memory
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        payload = cairosvg.svg2png(bytestring=svg, output_width=width, output_height=height)
        status = 0
    except BaseException:  # noqa: BLE001 - any failure is reported as a failed render
        payload = b""
    try:
        view = memoryview(_HEADER.pack(status, len(payload)) + payload)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
    finally:
        os._exit(0)


def render_png(svg: bytes, width: int, height: int, *, timeout: float | None = None,
               memory: int | None = None) -> bytes:
    """PNG bytes of ``svg`` at ``width``×``height``, or ``RenderFailed``."""
    timeout = RENDER_TIMEOUT_SECONDS if timeout is None else timeout
    memory = RENDER_MEMORY_BYTES if memory is None else memory
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read_fd)
        _child(write_fd, svg, width, height, memory)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                timed_out = True
                break
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if timed_out:
        raise RenderFailed("The SVG took too long to render.")
    data = b"".join(chunks)
    if len(data) < _HEADER.size:
        raise RenderFailed()
    status, length = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if status != 0 or len(payload) != length:
        raise RenderFailed()
    return payload
