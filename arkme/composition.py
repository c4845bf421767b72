"""The composition root: binds each tool Port to its implementation.

Production code only reads ``current_ports()``; tests may ``bind()`` fakes.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from toolregistry.ports import Ports

_override: Ports | None = None
_default: Ports | None = None


def _build() -> Ports:
    from galleries.adapters import ExtensionAdapter, GalleryAdapter
    from groups.adapters import GroupAdapter, GroupMemberAdapter

    from .adapters import AccountAdapter

    return Ports(accounts=AccountAdapter(), extensions=ExtensionAdapter(), groups=GroupAdapter(),
                 galleries=GalleryAdapter(), group_members=GroupMemberAdapter())


def current_ports() -> Ports:
    global _default
    if _override is not None:
        return _override
    if _default is None:
        _default = _build()
    return _default


@contextlib.contextmanager
def bind(ports: Ports) -> Iterator[Ports]:
    """Use ``ports`` for the duration of a block (tests only)."""
    global _override
    previous, _override = _override, ports
    try:
        yield ports
    finally:
        _override = previous
