"""The static catalog: every tool module in one ordered list, the profiles and the guidance.

Modules are listed by each layer's ``MODULES``; nothing is discovered from the file system.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from arkme.kernel.profiles import DEFAULT_PROFILE, Profile

from .guidance import GUIDANCE, Guidance
from .metadata import Kind, Phase, ToolModule
from .tools import atomic, business, system

DISABLED = Profile.DISABLED

# Which kinds each profile may show. ``disabled`` shows nothing and has no prompt.
PROFILE_KINDS: Mapping[str, frozenset[Kind]] = {
    Profile.BUSINESS: frozenset({Kind.SYSTEM, Kind.BUSINESS}),
    Profile.ATOMIC: frozenset({Kind.SYSTEM, Kind.ATOMIC}),
    Profile.HYBRID: frozenset({Kind.SYSTEM, Kind.BUSINESS, Kind.ATOMIC}),
    DISABLED: frozenset(),
}

# The phase sets a session can be in: core always, attachments while mounted.
PHASE_SETS: tuple[frozenset[Phase], ...] = (
    frozenset({Phase.CORE}),
    frozenset({Phase.CORE, Phase.ATTACHMENTS}),
)


@dataclass(frozen=True)
class Catalog:
    modules: tuple[ToolModule, ...]
    profile_kinds: Mapping[str, frozenset[Kind]]
    guidance: tuple[Guidance, ...]
    default_profile: str = str(DEFAULT_PROFILE)

    @property
    def profiles(self) -> tuple[str, ...]:
        return tuple(self.profile_kinds)

    def visible(self, profile: str, phases: frozenset[Phase]) -> tuple[ToolModule, ...]:
        """The modules a session in ``profile`` with ``phases`` mounted may see, in catalog order."""
        if profile == DISABLED or profile not in self.profile_kinds:
            return ()
        return tuple(
            module for module in self.modules
            if profile in module.METADATA.profiles and module.METADATA.phase in phases
        )


CATALOG = Catalog(
    modules=(*system.MODULES, *business.MODULES, *atomic.MODULES),
    profile_kinds=PROFILE_KINDS,
    guidance=GUIDANCE,
)
