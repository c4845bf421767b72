"""JSON Schemas (draft 2020-12) of what tools return, generated from the typed projections
(TypedDicts) that the tools return, so a result's shape is written once: in its type.

The MCP ``outputSchema`` is the schema with every projection inline (it must stand alone); the
OpenAPI schema names each projection once, as a component, through ``ref``. Each object is
closed (``additionalProperties: false``), so a result that grows a field its type does not
name fails the suite's check of every result the tests see.

The walk is written here rather than taken from msgspec or pydantic: msgspec sorts properties
and enum words and refuses a union of TypedDicts (the add tool's result), and pydantic takes
only ``typing_extensions.TypedDict`` on Python 3.11. The keywords ride in msgspec's ``Meta``.
"""
from __future__ import annotations

import types
import typing
from typing import Any, Callable, Literal, NotRequired, Required, Union

from msgspec import Meta

Schema = dict[str, Any]
Ref = Callable[[type], "str | None"]
"""A projection's ``$ref`` target when it is named elsewhere, or None to put it inline."""

_SCALARS: dict[Any, str] = {str: "string", int: "integer", bool: "boolean"}
# Meta's attributes and the JSON Schema keyword each one is; any other set attribute is refused,
# so no constraint a projection states is silently left out of its schema.
_KEYWORDS = {"ge": "minimum", "le": "maximum", "title": "title", "description": "description"}
_META_ATTRIBUTES = ("gt", "ge", "lt", "le", "multiple_of", "pattern", "min_length", "max_length", "tz", "title",
                    "description", "examples", "extra_json_schema", "extra")


class NotAProjection(TypeError):
    """The type cannot be a result's schema: results hold TypedDicts, lists, str, int, bool."""


def result_schema(result_type: Any, *, ref: Ref | None = None,
                  branch: Callable[[Any], Schema] | None = None) -> Schema:
    """The schema of a tool's result: one projection, or a union of titled projections (one
    per action, told apart by their keys: each branch is closed and requires its own).
    ``branch`` turns a union member into the schema that stands in its place (a ``$ref``)."""
    members = union_members(result_type)
    if len(members) == 1:
        return projection_schema(result_type, ref=ref, inline=True)
    for member in members:
        if not title_of(member):
            raise NotAProjection(f"{member!r}: each alternative of a result is titled (Meta(title=...))")
    make = branch or (lambda member: projection_schema(member, ref=ref, inline=True))
    return {"type": "object", "oneOf": [make(member) for member in members]}


def union_members(result_type: Any) -> tuple[Any, ...]:
    if typing.get_origin(result_type) in (Union, types.UnionType):
        return typing.get_args(result_type)
    return (result_type,)


def title_of(result_type: Any) -> str:
    return next((meta.title for meta in _metas(result_type) if meta.title), "")


def projection_of(result_type: Any) -> type:
    """The TypedDict under a result type's annotations."""
    base = typing.get_args(result_type)[0] if typing.get_origin(result_type) is typing.Annotated else result_type
    if not typing.is_typeddict(base):
        raise NotAProjection(f"{result_type!r} is not a typed projection (a TypedDict)")
    return typing.cast(type, base)


def projection_schema(annotation: Any, *, ref: Ref | None = None, inline: bool = False) -> Schema:
    """The schema of one annotation. A TypedDict becomes ``ref``'s ``$ref`` unless ``inline``
    (the projection's own body, where it is being named)."""
    base, metas = annotation, _metas(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        base = typing.get_args(annotation)[0]
    schema = _base_schema(base, ref, inline)
    for meta in metas:
        schema.update(_keywords(meta))
    return schema


def _metas(annotation: Any) -> list[Meta]:
    if typing.get_origin(annotation) is not typing.Annotated:
        return []
    return [extra for extra in annotation.__metadata__ if isinstance(extra, Meta)]


def _keywords(meta: Meta) -> Schema:
    keywords: Schema = {}
    for attribute in _META_ATTRIBUTES:
        value = getattr(meta, attribute)
        if value is None or attribute == "extra_json_schema":
            continue
        if attribute not in _KEYWORDS:
            raise NotAProjection(f"Meta({attribute}=...) has no keyword here; use extra_json_schema")
        keywords[_KEYWORDS[attribute]] = value
    keywords.update(meta.extra_json_schema or {})
    return keywords


def _base_schema(base: Any, ref: Ref | None, inline: bool) -> Schema:
    if typing.is_typeddict(base):
        target = None if inline or ref is None else ref(base)
        return {"$ref": target} if target else _object_schema(base, ref)
    origin = typing.get_origin(base)
    if origin is list:
        return {"type": "array", "items": projection_schema(typing.get_args(base)[0], ref=ref)}
    if origin is Literal:
        return {"enum": list(typing.get_args(base))}
    if base in _SCALARS:
        return {"type": _SCALARS[base]}
    raise NotAProjection(f"{base!r} has no schema in a result: results hold TypedDicts, lists, str, int, bool")


def _object_schema(projection: type, ref: Ref | None) -> Schema:
    hints = typing.get_type_hints(projection, include_extras=True)
    properties = {name: projection_schema(_unrequired(hint), ref=ref) for name, hint in hints.items()}
    total = getattr(projection, "__total__", True)
    return {"type": "object", "properties": properties,
            "required": [name for name, hint in hints.items() if _required(hint, total)], "additionalProperties": False}


def _required(hint: Any, total: bool) -> bool:
    """Read from the resolved hint: under postponed annotations (PEP 563) Python 3.11's
    ``__required_keys__`` counts a ``NotRequired`` key as required."""
    origin = typing.get_origin(hint)
    return origin is Required or (origin is not NotRequired and total)


def _unrequired(hint: Any) -> Any:
    """``NotRequired[X]`` and ``Required[X]`` say whether a key is present, not what its value is."""
    return typing.get_args(hint)[0] if typing.get_origin(hint) in (NotRequired, Required) else hint
