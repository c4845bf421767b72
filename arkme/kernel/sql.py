"""Names for SQL written once per database vendor: tables and columns from the models."""
from __future__ import annotations

from typing import Any

from django.db import connection
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
