"""What a session sees: its phases and the compiled toolset for its profile and phases."""
from __future__ import annotations

from arkme.conversations.models import AgentSession

from .metadata import Phase
from .registrar import Toolset, registrar


def session_phases(session: AgentSession) -> list[Phase]:
    return [Phase.CORE, Phase.ATTACHMENTS] if session.attachments_mounted else [Phase.CORE]


def session_toolset(session: AgentSession) -> Toolset:
    return registrar.toolset(session.profile, session_phases(session))
