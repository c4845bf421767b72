"""What a call does with an SVG, for three SVGs (simple, 300 paths, gradients): the
restricted-SVG check, the render in a bounded render process, the rendered PNG's stream check
(which proves it is exactly its image, so it is kept without a separate decode) and the
fingerprint; against the same work with bare ``cairosvg.svg2png`` in-process
(``bench.gallery_floors.derive``).

Measured twice: as the embedded default runs (the render process called in-process), and as
production runs, through the render task on a Redis broker with a Celery worker in its own
process (when Redis answers on 127.0.0.1:6379; skipped with a reason otherwise). The figure
is the worse of the two.
"""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from .common import Result, paired_medians

ROOT = Path(__file__).resolve().parents[1]
BROKER = "redis://127.0.0.1:6379/13"
# The queue the render task is routed to (CELERY_TASK_ROUTES), which the worker here consumes,
# as the Procfile's `render` process does; tests/bench/test_harness.py holds the two together.
RENDER_QUEUE = "render"


def svgs() -> dict[str, bytes]:
    head = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 800 800">'
    simple = head + '<circle cx="400" cy="400" r="300" fill="#e33"/></svg>'
    paths = head + "".join(
        f'<path d="M{400 + 300 * math.cos(i / 30):.1f} {400 + 300 * math.sin(i / 30):.1f} '
        f'L{400 + 150 * math.cos(i / 7):.1f} {400 + 150 * math.sin(i / 7):.1f} Q400 400 {i % 800} {800 - i % 800} Z" '
        f'fill="none" stroke="#{i * 7919 % 0xFFFFFF:06x}" stroke-width="2"/>' for i in range(300)) + "</svg>"
    gradients = head + "<defs>" + "".join(
        f'<linearGradient id="g{i}" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#{i * 40:02x}2060"/>'
        f'<stop offset="1" stop-color="#20{i * 40:02x}a0"/></linearGradient>' for i in range(6)) + "</defs>" + "".join(
        f'<rect x="{i * 120}" y="{i * 100}" width="300" height="300" rx="40" fill="url(#g{i})" opacity="0.8"/>'
        for i in range(6)) + "</svg>"
    return {"simple": simple.encode(), "300 paths": paths.encode(), "gradients": gradients.encode()}


def measure() -> tuple[float, float]:
    """(product, floor) median seconds for the three SVGs, in this process as configured."""
    import hashlib

    from galleries.ingest.process_image import process_image

    from .gallery_floors import derive

    sources = svgs()

    def product():
        for data in sources.values():
            process_image(data)

    def floor():
        for data in sources.values():
            hashlib.sha256(derive(data)).hexdigest()

    return paired_medians(product, floor, rounds=15)


def _redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


def _on_a_broker() -> tuple[float, float]:
    """The same measurement in a process whose renders go through the task to a worker."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "CELERY_BROKER_URL": BROKER,
           "ARKME_TASK_WAIT_SECONDS": "60", "ARKME_REQUEST_BUDGET_SECONDS": "120"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "warning", "-c", "1", "-Q", RENDER_QUEUE,
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"bench-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(3)  # the first render waits for the worker anyway; this keeps it out of the warm-up
        inner = subprocess.run([sys.executable, "-m", "bench.svg_normalise", "--inner"], cwd=ROOT, env=env,
                               capture_output=True, text=True)
        if inner.returncode:
            # The figure says why it failed: the inner run's last lines, not only its exit status.
            raise RuntimeError(f"the measurement on a broker failed: {inner.stderr.strip()[-600:]}")
        output = inner.stdout
        ours, least = json.loads(output.strip().splitlines()[-1])
        return ours, least
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


def run() -> Result:
    ours, least = measure()
    ratio = ours / least
    detail: dict[str, object] = {"in_process": f"{ratio:.3f}× ({ours * 1000:.1f} against {least * 1000:.1f} ms)"}
    worst = ratio
    if _redis_answers():
        broker_ours, broker_least = _on_a_broker()
        broker = broker_ours / broker_least
        worst = max(worst, broker)
        detail["on_a_redis_broker"] = f"{broker:.3f}× ({broker_ours * 1000:.1f} against {broker_least * 1000:.1f} ms)"
    else:
        detail["on_a_redis_broker"] = "skipped: no Redis on 127.0.0.1:6379"
    return Result("svg_normalise", round(worst, 3), "× floor (worse of in-process and on a broker)",
                  "the SVG check, bare cairosvg.svg2png, the PNG stream check and sha256, in-process",
                  "≤ 1.1×", worst <= 1.1, detail)


if __name__ == "__main__" and sys.argv[1:] == ["--inner"]:
    import django

    django.setup()
    from django.conf import settings

    assert not settings.CELERY_TASK_ALWAYS_EAGER, "the broker run must render through the task"
    print(json.dumps(measure()))
