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

Only pure work belongs here: the pool's threads have no request, no database connection of
the request and no tracing context.
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

_pool: Any = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_forget_pool)


def _gevent_serving() -> bool:
    """Whether this process's threads are gevent's (a gevent worker patched it)."""
    if "gevent" not in sys.modules:
        return False
    from gevent import monkey

    return bool(monkey.is_module_patched("threading"))


def _threads() -> Any:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                from gevent.threadpool import ThreadPool

                _pool = ThreadPool(THREADS)
    return _pool


def offload(work: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``work(*args, **kwargs)``, on the pool's threads under gevent and here otherwise; its
    result is returned and its exception raised to the caller either way."""
    if not _gevent_serving():
        return work(*args, **kwargs)
    result: T = _threads().apply(work, args, kwargs)
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

        _threads().spawn(run)
        return future


def os_thread_executor() -> contextlib.AbstractContextManager[Executor | None]:
    """For a library that runs an event loop in the serving thread and hands its synchronous
    work to an executor (django-health-check): under gevent, the pool's real threads, for the
    default executor's threads would be greenlets of the loop's own thread, where Django
    refuses every database call. Otherwise ``None``: the loop's default executor."""
    if not _gevent_serving():
        return contextlib.nullcontext(None)
    return contextlib.nullcontext(_OSThreads())
