"""The API's JSON renderer (orjson) says what DRF's renderer says."""
from __future__ import annotations

import datetime
import decimal
import json
import uuid

import pytest
from django.utils import timezone
from django.utils.functional import lazy
from rest_framework.renderers import JSONRenderer as DrfRenderer

from toolregistry.api.renderers import JSONRenderer

WHEN = datetime.datetime(2026, 12, 6, 10, 11, 12, 345678, tzinfo=datetime.UTC)
BODIES = [
    {"result": {"group": {"name": "Café ☕ 群", "join_policy": "open", "member_count": 3},
                "candidates": [{"candidate_ref": "eyJjIjoiY2hhdF94In0:1v:abc", "display_name": "Zoë"}] * 50,
                "truncated": True, "scope": "recent"}},
    {"error": {"code": "invalid_arguments", "message": "bad \"quote\" \\ and \n newline",
               "details": {"fields": ["limit"], "retry_after_seconds": 1.5}}},
    {"at": WHEN, "day": WHEN.date(), "time": WHEN.time(), "naive": timezone.make_naive(WHEN, datetime.UTC),
     "span": datetime.timedelta(seconds=90), "price": decimal.Decimal("1.10"), "id": uuid.UUID(int=7),
     "lazy": lazy(lambda: "translated", str)(), "tuple": (1, 2), "nested": [[], {}, None, False, 0, -1, 2 ** 63 - 1]},
    {"line": "a\u2028b\u2029c"},
    {1: "an integer key", "big": 2 ** 70},
    [],
    "a string",
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_the_same_bytes_as_drf(body):
    """Compact, UTF-8, keys in order, dates, decimals and lazy strings as DRF writes them,
    U+2028 and U+2029 escaped; an integer key or a 70-bit integer through DRF itself."""
    ours, theirs = JSONRenderer().render(body), DrfRenderer().render(body)
    assert ours == theirs
    assert json.loads(ours) == json.loads(theirs)


def test_indent_and_none_are_drfs():
    body = {"a": [1, 2]}
    assert JSONRenderer().render(body, "application/json; indent=2") == DrfRenderer().render(
        body, "application/json; indent=2")
    assert JSONRenderer().render(None) == b""
