"""Request parsers that refuse what the views must never see.

JSON: only JSON (no ``NaN`` or ``Infinity``, which Python's decoder accepts, and no number too
large for a float, which it turns into infinity: none is JSON, and PostgreSQL's JSON columns
refuse them), no object naming a key twice (decoders differ on which value wins, so a host
could show the human one value while the call ran with the other, and an approval is bound to
the exact arguments), no nesting deeper than ``MAX_DEPTH`` and no string (key or value)
holding a lone UTF-16 surrogate, which no database, digest or log line can encode. Multipart: the body must end
with its closing boundary; a body cut off mid-file would otherwise be recorded with the
file silently dropped.
"""
from __future__ import annotations

import json
import math
import re
from typing import IO, Any, Mapping

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, MultiPartParser

MAX_DEPTH = 64
# A lone surrogate can reach a decoded string only as a \u escape: UTF-8 cannot carry one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _may_break_a_rule(raw: bytes) -> bool:
    """Whether the decoded body needs the walk at all. Only a body with more than
    ``MAX_DEPTH`` brackets can nest deeper than that, and only one with a surrogate's escape
    can hold a lone surrogate; both are counted in C, where walking every value of every body
    cost a request more than its decoding."""
    return raw.count(b"{") + raw.count(b"[") > MAX_DEPTH or _SURROGATE_ESCAPE.search(raw) is not None


def _check(value: Any, depth: int = 0) -> None:
    # Iterative over siblings, recursive over depth, which is bounded first.
    if depth > MAX_DEPTH:
        raise ParseError(f"The JSON body nests deeper than {MAX_DEPTH} levels.")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ParseError("The JSON body holds a string that is not valid Unicode.") from exc
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, depth + 1)
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):  # 1e999 and the like
        raise ValueError("a number out of range")
    return number


class _RepeatedKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _RepeatedKey
    return value


def loads_strict(raw: bytes) -> Any:
    """The body as JSON, or ``ParseError``: not JSON, a key named twice in one object, too
    deep, or not valid Unicode."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_not_json, parse_float=_finite,
                          object_pairs_hook=_object)
    except _RepeatedKey as exc:
        # The key is not echoed: the message is shown to the model, the key is anyone's text.
        raise ParseError("The request body names the same key twice in one object.") from exc
    except (ValueError, RecursionError) as exc:
        # RecursionError: a body nested thousands of levels deep.
        raise ParseError("The request body is not valid JSON.") from exc
    if _may_break_a_rule(raw):
        _check(data)
    return data


class StrictJSONParser(JSONParser):
    def parse(self, stream: IO[bytes], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        return loads_strict(stream.read() if stream is not None else b"")


class _TailRecorder:
    """A stream that remembers the last bytes read from it."""

    def __init__(self, stream: IO[bytes], keep: int) -> None:
        self.stream, self.keep, self.tail = stream, keep, b""

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size)
        if chunk:
            self.tail = (self.tail + chunk)[-self.keep:]
        return chunk


class CompleteMultiPartParser(MultiPartParser):
    def parse(self, stream: IO[bytes], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        boundary = (media_type or "").partition("boundary=")[2].split(";")[0].strip().strip('"').encode("latin-1")
        closing = b"--" + boundary + b"--"
        recorder = _TailRecorder(stream, len(closing) + 64)
        parsed = super().parse(recorder, media_type, parser_context)  # type: ignore[arg-type]
        if not boundary or not recorder.tail.rstrip(b"\r\n \t").endswith(closing):
            raise ParseError("The multipart body ended before its closing boundary.")
        return parsed
