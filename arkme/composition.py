"""The composition root: binds each tool Port to its implementation.

``arkme.apps`` installs the result into the registry's slot at start-up; the registry reads
the slot and never imports this module.
"""
from __future__ import annotations

from galleries.adapters import ExtensionAdapter, GalleryAdapter
from groups.adapters import GroupAdapter, GroupMemberAdapter
from toolregistry.ports import Ports

from .accounts.adapters import AccountAdapter


def build_ports() -> Ports:
    return Ports(accounts=AccountAdapter(), extensions=ExtensionAdapter(), groups=GroupAdapter(),
                 galleries=GalleryAdapter(), group_members=GroupMemberAdapter())
