"""Celery's Redis result store, carrying bytes as bytes.

A rendered PNG is the one task result that is mostly bytes. As base64 inside JSON it is a
third larger and costs an encode and a decode at each end: an 840 KB PNG took 9–10 ms to come
back that way against 4–5 ms as msgpack. So a result that carries bytes is written as
msgpack, and every other result as JSON, exactly as Celery's JSON store writes it (a web
process of the previous release reads those, mid-deploy).

Reading tells the two apart by the first byte: JSON text begins with an ASCII character, a
msgpack map or array with a byte of 0x80 or more. Only results are affected: task messages
stay JSON, and a result store that is not Redis (RPC over AMQP) carries JSON only, so the
render task is asked for bytes only where this store is in use (``carries_bytes``).
"""
from __future__ import annotations

from typing import Any

import msgpack  # type: ignore[import-untyped]  # no stubs
from celery import current_app

# Celery 5.7's in-band result compression, newer than celery-types' stubs.
from celery.backends.base import compress_payload, decompress_payload  # type: ignore[attr-defined]
from celery.backends.redis import RedisBackend

# The class as Celery's ``result_backend`` names it: "<this>+redis://host:port/db".
STORE = "arkme.kernel.result_store:RedisResultStore"
# msgpack's fixmap, fixarray, array 16/32 and map 16/32: what a result meta (a map) or a
# chord's part (an array) opens with. No JSON text opens with any of them.
_MSGPACK_CONTAINERS = frozenset(range(0x80, 0xA0)) | {0xDC, 0xDD, 0xDE, 0xDF}
# A result is a few levels deep (meta, answer, value); deeper structures are not looked into.
_DEPTH = 6


def result_backend_url(url: str | None) -> str | None:
    """``url`` as the application's result backend: a Redis URL names this store."""
    if url and url.startswith(("redis://", "rediss://")):
        return f"{STORE}+{url}"
    return url


def carries_bytes() -> bool:
    """Whether the application's result store brings bytes back as bytes."""
    return isinstance(current_app.backend, RedisResultStore)


def _has_bytes(value: Any, depth: int = _DEPTH) -> bool:
    if isinstance(value, bytes | bytearray | memoryview):
        return True
    if depth == 0:
        return False
    if isinstance(value, dict):
        return any(_has_bytes(item, depth - 1) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_has_bytes(item, depth - 1) for item in value)
    return False


class RedisResultStore(RedisBackend):
    compression: str | None  # set by Celery's Backend from ``result_compression``

    def encode(self, data: Any) -> Any:
        if not _has_bytes(data):
            return super().encode(data)
        payload = msgpack.packb(data, use_bin_type=True)
        return compress_payload(payload, self.compression) if self.compression else payload

    def decode(self, payload: Any) -> Any:
        payload = decompress_payload(payload)
        if isinstance(payload, bytes | bytearray) and payload[:1] and payload[0] in _MSGPACK_CONTAINERS:
            return msgpack.unpackb(payload, raw=False)
        return super().decode(payload)
