"""libvips, started once per process, for the modules that decode, turn or convert with it."""
from __future__ import annotations

import functools
from types import ModuleType

from arkme.kernel.native_memory import limit_malloc_arenas


@functools.cache
def libvips() -> ModuleType:
    """libvips, started in the process that first processes a photograph: a Celery parent
    that forks its children never starts it, and no child inherits its threads."""
    # Before libvips' first thread: what its decoder frees, its encoder may then reuse.
    limit_malloc_arenas()
    import pyvips

    # libvips keeps recent operations and their pixels for reuse; an upload is never
    # processed twice in a row, so the cache would only hold decoded images after their call.
    pyvips.cache_set_max(0)
    module: ModuleType = pyvips  # untyped: its stubs do not exist
    return module
