"""The registrar: compiles a (profile, phases) pair into tool definitions and a prompt, once.

Listing tools for a session is then a dictionary look-up. The compiled result is immutable
and shared between requests and threads.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from django.core.exceptions import ImproperlyConfigured
from jsonschema import Draft202012Validator

from .catalog import CATALOG, DISABLED, Catalog
from .catalog_checks import select_guidance
from .metadata import Phase, ToolDefinition, ToolMetadata, ToolModule
from .results import with_output_schema


@dataclass(frozen=True)
class CompiledTool:
    metadata: ToolMetadata
    definition: ToolDefinition
    validator: Draft202012Validator
    public: Mapping[str, Any]


@dataclass(frozen=True)
class Toolset:
    profile: str
    phases: frozenset[Phase]
    tools: tuple[CompiledTool, ...]
    prompt: str
    revision: str
    by_name: Mapping[str, CompiledTool] = field(repr=False, compare=False)
    # The session view's members that depend only on the toolset, serialised once.
    view_fragment: str = field(default="", repr=False, compare=False)

    def get(self, name: str) -> CompiledTool | None:
        return self.by_name.get(name)

    def definitions(self) -> list[Mapping[str, Any]]:
        return [tool.public for tool in self.tools]


def _compile_tool(module: ToolModule) -> CompiledTool:
    meta: ToolMetadata = module.METADATA
    definition: ToolDefinition = with_output_schema(module.definition())
    if definition.name != meta.name:
        # Never a silent rename: the model-facing name is part of the contract.
        raise ImproperlyConfigured(
            f"tool {meta.id} materialised as {definition.name!r}, catalog says {meta.name!r}"
        )
    public = {
        "name": definition.name,
        "description": definition.description,
        "input_schema": definition.input_schema,
        "metadata": meta.as_dict(),
    }
    return CompiledTool(
        metadata=meta, definition=definition,
        validator=Draft202012Validator(definition.input_schema), public=public,
    )


class Registrar:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cache: dict[tuple[str, frozenset[Phase]], Toolset] = {}
        self._compiled: dict[str, CompiledTool] = {}
        self._lock = threading.Lock()

    def toolset(self, profile: str, phases: Iterable[Phase | str]) -> Toolset:
        key = (profile, frozenset(Phase(phase) for phase in phases))
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._compile(*key)
            return self._cache[key]

    def _tool(self, module: ToolModule) -> CompiledTool:
        compiled = self._compiled.get(module.METADATA.id)
        if compiled is None:
            compiled = self._compiled[module.METADATA.id] = _compile_tool(module)
        return compiled

    def _compile(self, profile: str, phases: frozenset[Phase]) -> Toolset:
        if profile not in self.catalog.profile_kinds:
            raise ImproperlyConfigured(f"unknown profile {profile!r}")
        tools = tuple(self._tool(module) for module in self.catalog.visible(profile, phases))
        names = {tool.metadata.name for tool in tools}
        prompt = "" if profile == DISABLED else "\n\n".join(
            entry.text for entry in select_guidance(self.catalog, names)
        )
        # The session view's members that depend only on the toolset, each serialised once, and
        # its ETag: a digest of exactly those bytes, so it covers everything in the view that
        # can change (the tools in catalog order, each as built here, the prompt, the phases).
        phases_json, tools_json, prompt_json = (
            json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            for value in ([str(phase) for phase in Phase if phase in phases], [t.public for t in tools], prompt))
        digest = hashlib.sha256(f"{phases_json}\n{tools_json}\n{prompt_json}".encode()).hexdigest()[:20]
        fragment = f'"phases":{phases_json},"revision":"{digest}","tools":{tools_json},"prompt":{prompt_json}'
        return Toolset(
            profile=profile, phases=phases, tools=tools, prompt=prompt, revision=digest,
            by_name={tool.metadata.name: tool for tool in tools}, view_fragment=fragment,
        )


registrar = Registrar(CATALOG)
