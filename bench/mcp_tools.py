"""The tool sets the MCP benchmarks serve: N tools, both servers, the same definitions.

One is a cheap read, ``arkme_bench_echo`` (the call target, so that a call measures the
serving and not a domain query); the rest are the shipped tools again under numbered names,
with their real schemas, descriptions and metadata. In the product's server process
``install(n)`` puts a registrar over this catalog where the product reads its toolsets, so a
request runs the product's own code path end to end (authentication, session, toolset,
django-mcpz, the execution pipeline with validation and the audit row).
"""
from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace
from typing import Any

from bench.echo import ECHO, ECHO_INPUT, ECHO_OUTPUT, echo
from toolregistry.catalog import CATALOG, PROFILE_KINDS, Catalog
from toolregistry.metadata import Approval, Effect, Kind, Phase, ToolDefinition, ToolMetadata
from toolregistry.registrar import Registrar

__all__ = ["ECHO", "ECHO_INPUT", "ECHO_OUTPUT", "PHASES", "PROFILE", "SIZES", "echo", "install", "registrar",
           "write_definitions"]

SIZES = (7, 32, 128)
PROFILE = "hybrid"
PHASES = frozenset({Phase.CORE, Phase.ATTACHMENTS})


def _echo_module() -> SimpleNamespace:
    meta = ToolMetadata(id="arkme.bench_echo@1", name=ECHO, kind=Kind.SYSTEM, phase=Phase.CORE, effect=Effect.READ,
                        approval=Approval.NONE, profiles=("business", "atomic", "hybrid"), title="Echo")
    definition = ToolDefinition(name=ECHO, description="Returns its text.", input_schema=ECHO_INPUT,
                                execute=lambda context, arguments: echo(dict(arguments)), output_schema=ECHO_OUTPUT)
    return SimpleNamespace(METADATA=meta, definition=lambda: definition)


def _copy(module: Any, index: int) -> SimpleNamespace:
    meta = module.METADATA
    name = f"{meta.name}_{index}"
    area, _, version = meta.id.partition("@")
    renamed = dataclasses.replace(meta, id=f"{area}_{index}@{version}", name=name)
    definition = dataclasses.replace(module.definition(), name=name)
    return SimpleNamespace(METADATA=renamed, definition=lambda: definition)


def modules(n: int) -> list[SimpleNamespace]:
    shipped = list(CATALOG.modules)
    return [_echo_module()] + [_copy(shipped[i % len(shipped)], i) for i in range(n - 1)]


def registrar(n: int) -> Registrar:
    return Registrar(Catalog(modules=tuple(modules(n)), profile_kinds=PROFILE_KINDS, guidance=()))


def install(n: int) -> None:
    """In the product's server process: serve the N-tool catalog through the product's path."""
    import toolregistry.toolsets

    toolregistry.toolsets.registrar = registrar(n)


def listed_definitions(n: int) -> list[dict[str, Any]]:
    """The definitions exactly as the product's ``tools/list`` publishes them, for the peer."""
    from toolregistry.mcp.server import server_for

    server = server_for(registrar(n).toolset(PROFILE, PHASES))
    return [dict(tool.definition) for tool in server._tools.values()]


def write_definitions(n: int, path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(listed_definitions(n), handle, ensure_ascii=False)
