"""What a projection's field promises on the wire beyond its Python type: a count is never
negative, a position counts from 1, a format is one of a few words.

The domains' projections (the TypedDicts their selectors build) say it with these, and the
registry generates each tool's result schema from them, so a result's shape is written once.
The constraints ride in ``Annotated`` as msgspec's ``Meta``, a well-known carrier of JSON Schema
keywords: mypy sees the plain type, the generator reads the keywords.
"""
from __future__ import annotations

from typing import Annotated

from msgspec import Meta

NonNegative = Annotated[int, Meta(ge=0)]
"""A count, a size or a revision: 0 or more."""

Ordinal = Annotated[int, Meta(ge=1)]
"""A position or an index, counted from 1."""

Timestamp = Annotated[str, Meta(extra_json_schema={"format": "date-time"})]
"""An ISO 8601 date and time with its offset."""


def one_of(*words: str) -> Meta:
    """A string that is one of ``words``, in the order a reader should meet them."""
    return Meta(extra_json_schema={"enum": list(words)})
