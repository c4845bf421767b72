"""Names for SQL written once per database vendor: tables and columns from the models."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model


def field_of(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return field


def column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(str(field_of(model, name).column))


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


M = TypeVar("M", bound=Model)


@functools.cache
def _converters(model: type[Model], names: tuple[str, ...], vendor: str) -> tuple[Callable[[Any], Any] | None, ...]:
    """Per field, the database's converters as a query set would apply them (SQLite returns
    datetimes as text), or None where the driver's value is already the field's."""
    def converter(name: str) -> Callable[[Any], Any] | None:
        col = field_of(model, name).get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if not found:
            return None
        return lambda value: functools.reduce(lambda v, c: c(v, col, connection), found, value)

    return tuple(converter(name) for name in names)


def from_row(model: type[M], names: tuple[str, ...], values: Sequence[Any],
             db: BaseDatabaseWrapper | None = None) -> M:
    """A model instance from the columns of ``names`` in a row read with SQL written once per
    vendor: what ``Model.objects.raw()`` builds, without setting up a raw query set per read.
    ``db`` is the connection the row came from, when the caller already holds it."""
    db = db or default_db()
    converted = [convert(value) if convert else value
                 for convert, value in zip(_converters(model, names, db.vendor), values, strict=True)]
    return model.from_db(db.alias, names, converted)


def default_db() -> BaseDatabaseWrapper:
    """The default connection itself. Every attribute read through ``django.db.connection``
    looks the connection up again (a thread-local, or greenlet-local, read of about a
    microsecond); the statements every DSH call runs hold it once instead."""
    return connections[DEFAULT_DB_ALIAS]


@contextmanager
def hot_cursor() -> Iterator[Any]:
    """A cursor for the statements every DSH call runs, kept open on the connection.

    Opening and closing a Django cursor costs 40-80 µs of CPU with psycopg 3, more than some
    of these statements take to run, and a call ran five to seven of them. The cursor is kept
    per connection (connections are per thread, per greenlet under gevent workers) and made
    anew when the connection is; it is not used while statements are being logged (tests
    counting them, DEBUG), and a nested use gets a cursor of its own. Each user must fetch its
    results inside the block.
    """
    db = default_db()
    if db.queries_logged:
        with db.cursor() as cursor:
            yield cursor
        return
    db.ensure_connection()
    kept = getattr(db, "_arkme_hot_cursor", None)
    if kept is None or kept[0] is not db.connection or kept[2]:
        if kept is not None and kept[2]:  # in use further up the stack
            with db.cursor() as cursor:
                yield cursor
            return
        kept = [db.connection, db.cursor(), False]
        db._arkme_hot_cursor = kept  # type: ignore[attr-defined]
    kept[2] = True
    try:
        yield kept[1]
    finally:
        kept[2] = False
