"""The zlib the PNG stream check inflates and checksums with.

zlib-ng (the ``zlib-ng`` package, a drop-in for the standard module) inflates the check's
streams 10–25 times faster than the standard ``zlib`` on this project's images (a 2560×1600
screenshot in 3–4 ms instead of 26–70, a flat 4096² RGBA in 15 ms instead of 134–390;
docs/PERFORMANCE.md). The standard module is the fallback when it is not installed: the
check's answers are the same with either, only its speed differs.
"""
from __future__ import annotations

from types import ModuleType


def _best() -> ModuleType:
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        import zlib

        return zlib
    return zlib_ng


zlib: ModuleType = _best()
