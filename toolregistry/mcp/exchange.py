"""What one MCP request's tools read: the exchange the door built, for the request's duration.

Tools read it from a context variable, as the official SDKs' servers hand their tools a
request context; nothing is kept on the request but the principal django-mcpz binds a
``requestState`` to (``request.user``)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from arkme.conversations.models import AgentSession, DshClient

from .asking import StreamAsker

# The versions served: 2026-07-28 and the 2025 revisions served statelessly. 2025-03-26 is not
# offered: its JSON-RPC batches are not served (the library refuses them).
PROTOCOL_VERSION = "2026-07-28"
EARLIER_VERSIONS = ("2025-11-25", "2025-06-18")
SUPPORTED_VERSIONS = (PROTOCOL_VERSION, *EARLIER_VERSIONS)
# The 2025-06-18 schema requires a response's ``id``; later ones leave it out when unknown.
ID_REQUIRED_VERSIONS = frozenset({"2025-06-18"})


@dataclass
class Exchange:
    """One MCP request as the session's tools read it. ``refusal`` is the envelope of the
    refusal a tool answered with, for the server's tool error and the span."""

    client: DshClient
    session: AgentSession
    meta: Mapping[str, Any]
    refusal: dict[str, Any] | None = field(default=None)
    # A 2025-era ``tools/call`` whose client accepts an SSE stream: how its questions are asked.
    stream: StreamAsker | None = field(default=None)
    # The URL-mode questions a 2026-07-28 call asked, key → address (``SessionServer._result``).
    urls: dict[str, str] = field(default_factory=dict)


_exchange: ContextVar[Exchange] = ContextVar("arkme_mcp_exchange")


def current_exchange() -> Exchange:
    """The exchange of the MCP request being served (a LookupError outside one)."""
    return _exchange.get()

@contextmanager
def serving(exchange: Exchange) -> Iterator[Exchange]:
    """``exchange`` is the current one inside the block."""
    token = _exchange.set(exchange)
    try:
        yield exchange
    finally:
        _exchange.reset(token)
