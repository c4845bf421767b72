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
Readiness checks get their own few threads (``os_thread_executor``), so a probe never waits
behind images.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")
THREADS = 4
CHECK_THREADS = 5  # readiness runs at most five checks side by side

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


class _OSThreads(Executor):
    """``concurrent.futures``' interface over the pool's real threads, with the standard
    ``Future`` that asyncio's ``run_in_executor`` insists on."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:
                future.set_exception(error)

        _threads("checks", CHECK_THREADS).spawn(run)
        return future


def os_thread_executor() -> contextlib.AbstractContextManager[Executor | None]:
    """For a library that runs an event loop in the serving thread and hands its synchronous
    work to an executor (django-health-check): under gevent, real threads of their own, for the
    default executor's threads would be greenlets of the loop's own thread, where Django
    refuses every database call. Otherwise ``None``: the loop's default executor."""
    if not _gevent_serving():
        return contextlib.nullcontext(None)
    return contextlib.nullcontext(_OSThreads())
