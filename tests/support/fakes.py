"""Fake tool modules for catalog tests: a module is anything with METADATA and definition()."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from toolregistry.catalog import PROFILE_KINDS, Catalog
from toolregistry.guidance import Guidance
from toolregistry.metadata import (
    EXPLICIT_USER_WRITE,
    Approval,
    ApprovalCard,
    Effect,
    Kind,
    Phase,
    ToolDefinition,
    ToolMetadata,
)

SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
RESULT = {"type": "object", "properties": {"ran": {"type": "string"}}, "required": ["ran"]}


def fake_module(name: str, *, kind=Kind.BUSINESS, phase=Phase.CORE, effect=Effect.READ,
                approval=Approval.NONE, grant=None, profiles=None, tool_id=None,
                description="Does a thing.", schema=None, definition_name=None, card=True, output=None,
                title=None, **hints):
    if profiles is None:
        profiles = {Kind.SYSTEM: ("business", "atomic", "hybrid"), Kind.BUSINESS: ("business", "hybrid"),
                    Kind.ATOMIC: ("atomic", "hybrid")}[kind]
    meta = ToolMetadata(
        id=tool_id or f"arkme.{name.removeprefix('arkme_')}@1", name=name, kind=kind, phase=phase,
        effect=effect, approval=approval, grant=grant, profiles=tuple(profiles),
        title=name.replace("_", " ").capitalize() if title is None else title, **hints,
    )
    definition = ToolDefinition(
        name=definition_name or name, description=description, input_schema=schema or SCHEMA,
        execute=lambda context, arguments: {"ran": name},
        describe_approval=(lambda c, a: ApprovalCard("t", "b")) if card else None,
        output_schema=RESULT if output is None else output,
    )
    return SimpleNamespace(METADATA=meta, definition=lambda: definition)


def writer(name: str, **kw):
    kw.setdefault("effect", Effect.WRITE)
    kw.setdefault("grant", EXPLICIT_USER_WRITE)
    kw.setdefault("approval", Approval.PRE_EXECUTE)
    return fake_module(name, **kw)


def base_modules():
    return [
        fake_module("arkme_context", kind=Kind.SYSTEM),
        fake_module("arkme_lookup"),
        fake_module("arkme_attach", phase=Phase.ATTACHMENTS),
        fake_module("arkme_atom", kind=Kind.ATOMIC),
    ]


def catalog_of(modules, guidance=()):
    return Catalog(modules=tuple(modules), profile_kinds=PROFILE_KINDS, guidance=tuple(guidance))


__all__ = ["fake_module", "writer", "base_modules", "catalog_of", "Guidance", "replace"]
