"""The MCP surface: every session is also a Model Context Protocol server.

It is a second door into the same pipeline as REST execute (visibility, argument validation,
idempotency, the approval ledger, audit), never a looser one. django-mcpz speaks the protocol
(JSON-RPC framing, version negotiation, the 2026-07-28 header and ``_meta`` checks, the signed
``requestState`` of multi round-trip requests, the stateless 2025 handshake) as a plain
synchronous Django view, so it runs in the same gunicorn workers as the REST API.

- ``door``: the endpoint; who calls (client key and session), the exchange a call reads, the
  transport's answers the library does not give as this server serves them;
- ``server``: one django-mcpz server per compiled toolset, its tools translating an MCP call
  into the pipeline's ``ToolCall`` and its ``CallResult`` back;
- ``asking``: the questions of ``toolregistry.questions`` asked as form elicitations;
- ``stream``: a 2025-era call that asks, answered as an SSE stream, and ``answers``: how the
  client's answer, POSTed to any web process, reaches the one that asked (Redis or the database).
"""
