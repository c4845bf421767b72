"""The SVG render process: holds only cairosvg, runs under an address-space limit, and renders
one request after another from stdin to stdout. Its caller kills it at a render's deadline and
starts a fresh one after any failure, so a hostile input can cost one render process, never a
web or worker process.

Run as ``python -m galleries.ingest.svg_render_worker MEMORY_BYTES``. Framing:
ready:    one byte R, once started and limited
request:  !IIQ  width, height, svg length; then the svg
response: !BQ   status (0 ok, 1 failed), png length; then the png
"""
from __future__ import annotations

import os
import resource
import select
import struct
import sys
import time

REQUEST = struct.Struct("!IIQ")
RESPONSE = struct.Struct("!BQ")
OK, FAILED = 0, 1
READY = b"R"


def read_exact(fd: int, size: int, deadline: float | None = None) -> bytes:
    """Exactly ``size`` bytes; ``TimeoutError`` past ``deadline`` (monotonic), ``EOFError`` at the end."""
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main() -> None:
    import cairosvg  # the only heavy import

    with open("/proc/self/statm") as handle:
        mapped = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = mapped + int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    write_all(stdout, READY)
    while True:
        try:
            width, height, length = REQUEST.unpack(read_exact(stdin, REQUEST.size))
            svg = read_exact(stdin, length)
        except EOFError:
            return
        try:
            png = cairosvg.svg2png(bytestring=svg, output_width=width, output_height=height)
        except BaseException:
            write_all(stdout, RESPONSE.pack(FAILED, 0))
            return
        write_all(stdout, RESPONSE.pack(OK, len(png)) + png)


if __name__ == "__main__":
    main()
