"""The composition root: binds each tool Port to its implementation.

``config.apps`` installs the result into the registry's slot at start-up; the registry reads
the slot and never imports this module.
"""
from __future__ import annotations

from arkme.accounts.adapters import AccountAdapter
from galleries.adapters import ExtensionAdapter, GalleryAdapter
from groups.adapters import GroupAdapter, GroupMemberAdapter
from toolregistry.ports import Ports


def build_ports() -> Ports:
    return Ports(accounts=AccountAdapter(), extensions=ExtensionAdapter(), groups=GroupAdapter(),
                 galleries=GalleryAdapter(), group_members=GroupMemberAdapter())
