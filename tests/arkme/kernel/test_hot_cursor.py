"""The kept cursor of the hot-path statements: reused, never shared by nested uses, renewed
with the connection, and never hiding statements from those who count them."""
from __future__ import annotations

import pytest
from django.db import Error as DatabaseLibraryError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from arkme.kernel.sql import hot_cursor

pytestmark = pytest.mark.django_db


def _one(cursor) -> int:
    cursor.execute("SELECT 1")
    return cursor.fetchone()[0]


def test_the_cursor_is_kept_between_uses():
    with hot_cursor() as first:
        assert _one(first) == 1
    with hot_cursor() as second:
        assert _one(second) == 1
    assert second is first


def test_a_nested_use_gets_a_cursor_of_its_own():
    with hot_cursor() as outer:
        outer.execute("SELECT 1 UNION ALL SELECT 2 ORDER BY 1")
        with hot_cursor() as inner:
            assert inner is not outer
            assert _one(inner) == 1
        assert [row[0] for row in outer.fetchall()] == [1, 2]  # the outer results are intact
    with hot_cursor() as again:
        assert again is outer


def test_a_new_connection_gets_a_new_cursor():
    with hot_cursor() as before:
        _one(before)
    kept = connection._arkme_hot_cursor
    kept[0] = object()  # as if Django had replaced the connection under it
    with hot_cursor() as after:
        assert after is not before
        assert _one(after) == 1


def test_statements_are_counted_while_queries_are_logged():
    with CaptureQueriesContext(connection) as queries:
        with hot_cursor() as cursor:
            _one(cursor)
    assert [q["sql"] for q in queries] == ["SELECT 1"]


def test_an_error_in_the_block_releases_the_kept_cursor():
    with pytest.raises(ZeroDivisionError):
        with hot_cursor() as first:
            _one(first)
            raise ZeroDivisionError
    with hot_cursor() as second:  # free again: not a cursor of its own
        assert second is first
        with pytest.raises(ZeroDivisionError):
            with hot_cursor() as inner:
                raise ZeroDivisionError
        with pytest.raises(DatabaseLibraryError):  # the nested use's own cursor was closed on the way out
            _one(inner)
        assert _one(second) == 1
