"""The processes that decode and move images start with glibc's malloc arenas capped at one
(``MALLOC_ARENA_MAX``, read by glibc when a process starts): libvips decodes and encodes on a
pool of threads, and with an arena per thread the memory its decoder freed stayed in the
decoder's arenas while the encoder took fresh pages, so a web worker's peak held both. With one
arena the encoder reuses what the decoder freed; Python's small objects come from its own
allocator and native threads' small allocations from per-thread caches, so threads barely wait
on the arena's lock (the image pipeline measured the same speed)."""
from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="arenas are glibc's")

# Four threads allocate at once; glibc's malloc_info lists one <heap> per arena.
COUNT_ARENAS = """
import ctypes, os, tempfile, threading
libc = ctypes.CDLL(None)
libc.malloc.restype = libc.fopen.restype = ctypes.c_void_p
together = threading.Barrier(4)
def allocate():
    together.wait()
    for _ in range(100):
        libc.malloc(4096)
    together.wait()
threads = [threading.Thread(target=allocate) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
path = tempfile.mktemp()
handle = ctypes.c_void_p(libc.fopen(path.encode(), b"w"))
libc.malloc_info(0, handle)
libc.fclose(handle)
print(open(path).read().count("<heap nr="))
os.unlink(path)
"""


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def arenas(command: str, **env: str) -> int:
    """The arenas of a Python started by ``command``'s environment prefix (what precedes its
    program), through a shell as a Procfile runner starts it."""
    prefix = command.split(" gunicorn ")[0].split(" celery ")[0]
    assert prefix != command, command
    script = f"exec {prefix} {shlex.quote(sys.executable)} -c {shlex.quote(COUNT_ARENAS)}"
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(["bash", "-c", script], env={**environment, **env}, capture_output=True, text=True,
                         check=True, timeout=60)
    return int(out.stdout.split()[-1])


def test_uncapped_threads_take_arenas_of_their_own():
    # So the check can tell: without the variable, four threads allocating at once use several.
    assert arenas("env gunicorn x") > 1


@pytest.mark.parametrize("process", ["web", "worker", "render"])
def test_the_procfile_starts_the_web_and_the_workers_on_one_arena(process):
    assert arenas(procfile()[process]) == 1


def test_an_operators_setting_is_left_as_it_is():
    assert arenas(procfile()["web"], MALLOC_ARENA_MAX="3") == 3
