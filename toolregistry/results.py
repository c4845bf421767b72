"""What each tool returns: the typed projections its Ports return, and the tools' own
compositions of them. A tool's ``execute`` names its result type in its return annotation
(mypy checks that it returns it); its output schema is generated from that type.

Tool modules import these names for mypy only: at run time a tool depends on Ports and the
registry's own types, never on a domain (an import-linter contract), so the registry resolves
the annotation here, where the domains' projections are in reach.
"""
from __future__ import annotations

import functools
import typing
from dataclasses import replace
from typing import Annotated, Any, Mapping, TypedDict

from msgspec import Meta

from arkme.accounts.selectors import AccountView
from galleries.selectors import ConfirmView, ExtensionView, GalleryResult, PrepareView
from groups.selectors import AddMembersView, CandidatesView, GroupRefView

from .metadata import Execute, ToolDefinition
from .result_schemas import NotAProjection, Schema, result_schema

__all__ = [
    "AccountResult", "AddMembersView", "CandidatesView", "Cancelled", "Confirmed", "ContextResult",
    "GalleryResult", "Prepared", "output_schema", "result_type",
]


class ContextResult(TypedDict):
    account: AccountView
    extensions: list[ExtensionView]
    groups: list[GroupRefView]


class AccountResult(TypedDict):
    account: AccountView


# The add tool's three results, one per action, each its own named type.
Prepared = Annotated[PrepareView, Meta(title="Prepared")]
Confirmed = Annotated[ConfirmView, Meta(title="Confirmed")]
Cancelled = Annotated[GalleryResult, Meta(title="Cancelled")]


def result_type(execute: Execute) -> Any:
    """The type ``execute`` returns, resolved among the projections this module names."""
    try:
        return typing.get_type_hints(execute, localns=globals(), include_extras=True)["return"]
    except (KeyError, NameError) as exc:
        raise NotAProjection(f"{getattr(execute, '__qualname__', execute)!r} does not name its result type "
                             f"among toolregistry.results: {exc}") from None


@functools.cache
def _generated(execute: Execute) -> Schema:
    return result_schema(result_type(execute))


def output_schema(definition: ToolDefinition) -> Mapping[str, Any]:
    """The definition's output schema: the one it states, else generated from what its
    ``execute`` returns (every catalog tool: only test doubles state one)."""
    return definition.output_schema or _generated(definition.execute)


def with_output_schema(definition: ToolDefinition) -> ToolDefinition:
    return definition if definition.output_schema else replace(definition, output_schema=output_schema(definition))
