"""The ``Idempotency-Key`` header, read the same way by both doors (REST execute and MCP)."""
from __future__ import annotations

from typing import Protocol

from arkme.kernel.errors import ErrorCode, InvalidRequest

MAX_LENGTH = 200


class _HasHeaders(Protocol):
    @property
    def headers(self) -> object: ...


def idempotency_key_of(request: _HasHeaders) -> str | None:
    """The request's key, None without one; a malformed key is a 400 that runs nothing."""
    key = request.headers.get("Idempotency-Key")  # type: ignore[attr-defined]
    if key is not None and not (0 < len(key) <= MAX_LENGTH and key.isprintable()):
        raise InvalidRequest(f"Idempotency-Key must have 1 to {MAX_LENGTH} printable characters.",
                             code=ErrorCode.INVALID_IDEMPOTENCY_KEY)
    return key  # type: ignore[no-any-return]
