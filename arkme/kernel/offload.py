"""Long native work (decoding and encoding images) off the thread that serves requests.

The web workers are gevent's (``gunicorn.conf.py``): one thread per process serves every
request it holds, switching between them whenever one waits on the network or the database.
Work that holds that thread without waiting (libvips or Pillow decoding a 12-megapixel photo
takes a good part of a second) would stall every other request of the process meanwhile.
``offload`` runs such work on a small pool of real threads instead, where libvips and Pillow
release the GIL, and the calling request waits for it as it waits for the database: the
process goes on serving its other requests.

The pool has ``THREADS`` threads per process, so at most that many images are held decoded
at once (README's memory budget counts them). Without gevent (runserver, the tests, Celery
workers, a management command) the work runs in the calling thread, as before.

Work here runs outside its request: no tracing context, and a database call on these
threads opens a connection of its own, which the work must close (no request's end will).
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
THREADS = 4

_pools: dict[str, Any] = {}
_pools_lock = threading.Lock()


def _forget_pools() -> None:
    _pools.clear()  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_pools)


def _gevent_serving() -> bool:
    """Whether this process's threads are gevent's (a gevent worker patched it)."""
    if "gevent" not in sys.modules:
        return False
    from gevent import monkey

    return bool(monkey.is_module_patched("threading"))


def _threads(name: str, size: int) -> Any:
    pool = _pools.get(name)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(name)
            if pool is None:
                from gevent.threadpool import ThreadPool

                pool = _pools[name] = ThreadPool(size)
    return pool


def offload(work: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``work(*args, **kwargs)``, on the pool's threads under gevent and here otherwise; its
    result is returned and its exception raised to the caller either way."""
    if not _gevent_serving():
        return work(*args, **kwargs)
    result: T = _threads("work", THREADS).apply(work, args, kwargs)
    return result
