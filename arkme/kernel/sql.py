"""Names for SQL written once per database vendor: tables and columns from the models."""
from __future__ import annotations

import functools
from types import TracebackType
from typing import Any, Callable, Sequence, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init


def field_of(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return field


def column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(str(field_of(model, name).column))


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def columns(model: type[Model], alias: str, names: Sequence[str]) -> str:
    """``alias.column, …`` for the fields ``names`` (names or attnames), in their order."""
    return ", ".join(f"{alias}.{column(model, name)}" for name in names)


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
        if len(found) == 1:  # the usual case: one call, not a fold
            [only] = found
            return lambda value: only(value, col, connection)
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
    return loaded(model, db.alias, names, converted)


@functools.cache
def _plain_fields(model: type[Model], names: tuple[str, ...]) -> bool:
    """Whether ``names`` are attnames of the model's concrete fields and the model keeps
    Django's own ``__init__``: then an instance is fully described by its ``__dict__``."""
    attnames = {f.attname for f in model._meta.concrete_fields}
    return model.__init__ is Model.__init__ and not model._meta.abstract and set(names) <= attnames


def loaded(model: type[M], alias: str, names: Sequence[str], values: Sequence[Any]) -> M:
    """``model.from_db(alias, names, values)``: an instance loaded from the database with only
    ``names`` set, the rest deferred.

    ``from_db`` goes through ``Model.__init__``, which walks every concrete field and sends
    ``pre_init`` and ``post_init``; that cost about 4 µs an instance, and each DSH call builds
    three (the session, its account and its client). What ``__init__`` leaves on such an
    instance is exactly its ``ModelState`` and one ``__dict__`` entry per loaded attname (a
    deferred field is one missing from ``__dict__``), so that is written directly. A model
    with its own ``__init__`` or with receivers of either signal still goes through
    ``from_db``.
    """
    names = tuple(names)
    # ``receivers`` is every sender's: only when one is connected at all are this model's
    # looked for (about a microsecond each, twice per instance).
    if (not _plain_fields(model, names)
            or (pre_init.receivers and pre_init.has_listeners(model))
            or (post_init.receivers and post_init.has_listeners(model))):
        return model.from_db(alias, names, values)
    instance = model.__new__(model)
    state = ModelState()
    state.adding = False
    state.db = alias
    attributes = instance.__dict__
    attributes["_state"] = state
    attributes.update(zip(names, values, strict=True))
    return instance


def default_db() -> BaseDatabaseWrapper:
    """The default connection itself. Every attribute read through ``django.db.connection``
    looks the connection up again (a thread-local, or greenlet-local, read of about a
    microsecond); the statements every DSH call runs hold it once instead."""
    return connections[DEFAULT_DB_ALIAS]


class hot_cursor:
    """A cursor for the statements every DSH call runs, kept open on the connection.

    Opening and closing a Django cursor costs 40-80 µs of CPU with psycopg 3, more than some
    of these statements take to run, and a call ran five to seven of them. The cursor is kept
    per connection (connections are per thread, per greenlet under gevent workers) and made
    anew when the connection is; it is not used while statements are being logged (tests
    counting them, DEBUG), and a nested use gets a cursor of its own. Each user must fetch its
    results inside the block. A class rather than a generator-based context manager: a call
    enters it four times or more, and the generator's machinery cost more than the rest.
    """

    __slots__ = ("_kept", "_own")

    def __enter__(self) -> Any:
        db = default_db()
        kept = None
        if not db.queries_logged:
            db.ensure_connection()
            kept = getattr(db, "_arkme_hot_cursor", None)
            if kept is not None and kept[2]:  # in use further up the stack
                kept = None
            elif kept is None or kept[0] is not db.connection:
                kept = [db.connection, db.cursor(), False]
                db._arkme_hot_cursor = kept  # type: ignore[attr-defined]
        self._kept = kept
        if kept is None:
            self._own = db.cursor()
            return self._own.__enter__()
        kept[2] = True
        return kept[1]

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._kept is None:
            self._own.__exit__(kind, error, trace)
        else:
            self._kept[2] = False


def execute_custom_plan(cursor: Any, sql: str, params: Sequence[Any]) -> None:
    """``cursor.execute(sql, params)``, planned for these values every time on PostgreSQL.

    psycopg prepares a statement run often (``DATABASE_PREPARE_THRESHOLD``), and PostgreSQL
    then may settle on one generic plan for every value. That is right for most statements
    and wrong for one whose best plan depends on a value: a name search starts from a name
    index when the name is rare and reads the person's chats when it is common, and a generic
    plan chose the chats for every name (600 ms instead of 0.2 ms for a rare one over 100k
    chats; docs/PERFORMANCE.md). Such a statement is sent unprepared, so it is planned with
    its values. Where statements are being logged (tests, DEBUG) it goes through Django's
    cursor as any other, so it is seen and counted.
    """
    db = cursor.db
    if db.vendor == "postgresql" and not db.queries_logged:
        with db.wrap_database_errors:
            cursor.cursor.execute(sql, params, prepare=False)
    else:
        cursor.execute(sql, params)
