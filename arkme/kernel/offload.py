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
from typing import Any, Generic, TypeVar

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
    outcome: _Outcome[T] = _threads("work", THREADS).apply(_Outcome.of, (work, args, kwargs))
    return outcome.unwrap()


class _Outcome(Generic[T]):
    """A pool task's result or exception, carried back as a value. gevent's pool hands an
    exception raised on its thread to the hub's error handler, which prints its traceback
    (an image refused with a 422 was printed as a crash) before the caller gets it; carried
    as a value, it is raised only in the caller, as if the work had run there."""

    __slots__ = ("error", "value")

    def __init__(self, value: T | None, error: BaseException | None) -> None:
        self.value, self.error = value, error

    @classmethod
    def of(cls, work: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Outcome[T]:
        try:
            return cls(work(*args, **kwargs), None)
        except Exception as error:
            return cls(None, error)

    def unwrap(self) -> T:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.value  # type: ignore[return-value]
