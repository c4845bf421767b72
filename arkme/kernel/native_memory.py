"""How the C allocator serves native libraries that work on many threads.

glibc gives each thread that allocates under contention an arena of its own, up to eight per
core. libvips decodes and encodes on a pool of threads: memory a decoder's thread frees (its
line cache, some megabytes for a wide photograph) stays in that thread's arena, and the
encoder's threads then take fresh pages from theirs, so a worker's resident peak held both.
With one arena the encoder reuses what the decoder freed. Python's small objects come from
its own allocator and native threads' small allocations from their per-thread caches, so
threads barely wait on the arena's lock: the image pipeline measured the same speed.
"""
from __future__ import annotations

import ctypes
import functools
import os

# mallopt's parameter for the most arenas (malloc.h: M_ARENA_MAX).
_M_ARENA_MAX = -8
ARENAS = 1


@functools.cache
def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's arenas for this process; False where the C library is not glibc.

    glibc fixes the cap the first time it needs a ninth arena, so this is called before a
    native library starts its threads (the first image a process decodes). An operator's
    ``MALLOC_ARENA_MAX``, read by glibc at start, is left as it is.
    """
    if os.environ.get("MALLOC_ARENA_MAX"):
        return True
    try:
        # The process's own symbols: the C library it runs on, found without a search.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))
