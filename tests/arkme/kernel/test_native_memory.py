"""The C allocator's arenas are capped before libvips starts its threads."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from arkme.kernel import native_memory

ROOT = Path(__file__).resolve().parents[3]
glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="arenas are glibc's")

# Four threads allocate at once; glibc's malloc_info lists one <heap> per arena.
COUNT_ARENAS = """
import ctypes, os, sys, tempfile, threading
{setup}
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


def arenas_after(setup: str, **env: str) -> int:
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", COUNT_ARENAS.format(setup=setup)], cwd=ROOT,
                         env={**environment, **env}, capture_output=True, text=True, check=True, timeout=60)
    return int(out.stdout.split()[-1])


@glibc_only
def test_threads_share_one_arena_once_capped():
    assert arenas_after("") > 1  # the check can tell: uncapped, threads take arenas of their own
    assert arenas_after("from arkme.kernel.native_memory import limit_malloc_arenas\n"
                        "assert limit_malloc_arenas()") == 1


@glibc_only
def test_the_first_photograph_a_process_decodes_caps_the_arenas_first():
    setup = ("os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
             "os.environ.setdefault('DJANGO_SECRET_KEY', 'test')\n"
             "from galleries.ingest.vips import libvips\n"
             "libvips()")
    assert arenas_after(setup) == 1


@glibc_only
def test_the_web_process_caps_the_arenas_before_its_threads_start():
    setup = ("os.environ.setdefault('DJANGO_SECRET_KEY', 'test')\n"
             "import config.wsgi")
    assert arenas_after(setup) == 1


@glibc_only
def test_an_operators_setting_is_left_as_it_is():
    assert arenas_after("from arkme.kernel.native_memory import limit_malloc_arenas\n"
                        "assert limit_malloc_arenas()", MALLOC_ARENA_MAX="3") == 3


def test_a_c_library_without_mallopt_is_left_alone(monkeypatch):
    class WithoutMallopt:
        def __init__(self, name):
            pass

        def __getattr__(self, name):
            raise AttributeError(name)

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setattr(native_memory.ctypes, "CDLL", WithoutMallopt)
    assert native_memory.limit_malloc_arenas.__wrapped__(1) is False
