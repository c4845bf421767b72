"""Static validation of a catalog, run as a Django system check at start-up and by
``manage.py check`` / ``arkme_catalog check``. Pure: it takes a Catalog and returns problems.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from .catalog import DISABLED, PHASE_SETS, Catalog
from .guidance import Guidance
from .metadata import Approval, Effect, Kind, ToolModule
from .result_schemas import NotAProjection
from .results import output_schema

ID_PATTERN = re.compile(r"^arkme\.[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?@[1-9][0-9]*$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
GRANT_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
# A tool name as it would appear in prompt text.
MENTION_PATTERN = re.compile(r"\barkme_[a-z0-9_]+\b")
MAX_TITLE = 60
MAX_DESCRIPTION = 1024
MAX_TOOLS_PER_PROFILE = 128


@dataclass(frozen=True)
class Problem:
    id: str
    message: str


def validate_catalog(catalog: Catalog) -> list[Problem]:
    problems: list[Problem] = []

    def add(code: str, message: str) -> None:
        problems.append(Problem(code, message))

    metas = [module.METADATA for module in catalog.modules]

    for value, count in Counter(meta.id for meta in metas).items():
        if count > 1:
            add("toolregistry.E001", f"duplicate tool id {value!r}")
    for value, count in Counter(meta.name for meta in metas).items():
        if count > 1:
            add("toolregistry.E002", f"duplicate tool name {value!r}")

    for module in catalog.modules:
        meta = module.METADATA
        if not ID_PATTERN.fullmatch(meta.id):
            add("toolregistry.E003", f"tool id {meta.id!r} is not arkme.<area>.<verb>@<n>")
        if not NAME_PATTERN.fullmatch(meta.name):
            add("toolregistry.E004", f"tool name {meta.name!r} does not match {NAME_PATTERN.pattern}")
        for profile in meta.profiles:
            allowed = catalog.profile_kinds.get(profile)
            if allowed is None:
                add("toolregistry.E007", f"{meta.name}: unknown profile {profile!r}")
            elif meta.kind not in allowed:
                add("toolregistry.E007", f"{meta.name}: a {meta.kind} tool may not be in profile {profile!r}")
        if meta.kind is Kind.SYSTEM:
            for profile in catalog.profiles:
                if profile != DISABLED and profile not in meta.profiles:
                    add("toolregistry.E008", f"{meta.name}: system tool missing from profile {profile!r}")
        if meta.effect is Effect.WRITE and not (meta.grant and GRANT_PATTERN.fullmatch(meta.grant)):
            add("toolregistry.E009", f"{meta.name}: a write must declare an explicit grant")
        if meta.effect is Effect.READ and (meta.grant is not None or meta.approval is not Approval.NONE):
            add("toolregistry.E010", f"{meta.name}: a read takes neither a grant nor an approval")
        if not 0 < len(meta.title) <= MAX_TITLE:
            add("toolregistry.E016", f"{meta.name}: title must have 1 to {MAX_TITLE} characters")
        if meta.effect is Effect.READ and (meta.destructive or meta.idempotent is False):
            add("toolregistry.E017", f"{meta.name}: a read is neither destructive nor unrepeatable")
        problems.extend(_definition_problems(module))

    for profile in catalog.profiles:
        for phases in PHASE_SETS:
            visible = catalog.visible(profile, phases)
            if len(visible) > MAX_TOOLS_PER_PROFILE:
                add("toolregistry.E006", f"profile {profile!r} shows {len(visible)} tools; at most {MAX_TOOLS_PER_PROFILE}")
            names = {module.METADATA.name for module in visible}
            for entry in select_guidance(catalog, names):
                for mentioned in sorted(set(MENTION_PATTERN.findall(entry.text)) - names):
                    phase_list = ",".join(sorted(phases))
                    add("toolregistry.E011", f"guidance {entry.key!r} names {mentioned!r}, invisible in profile {profile!r} with phases {phase_list}")
    return problems


def select_guidance(catalog: Catalog, visible_names: set[str]) -> list[Guidance]:
    return [entry for entry in catalog.guidance if set(entry.requires) <= visible_names and entry.requires]


def _schema_problems(code: str, what: str, schema: Mapping[str, Any], shaped: bool, shape: str) -> list[Problem]:
    """A schema must be valid JSON Schema, and then have the shape its use needs."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [Problem(code, f"{what} is not valid JSON Schema: {exc.message}")]
    return [] if shaped else [Problem(code, f"{what} {shape}")]


def _definition_problems(module: ToolModule) -> list[Problem]:
    meta = module.METADATA
    problems: list[Problem] = []
    definition = module.definition()
    if definition.name != meta.name:
        problems.append(Problem("toolregistry.E012", f"{meta.name}: its definition is named {definition.name!r}"))
    description = (definition.description or "").strip()
    if not description or len(definition.description) > MAX_DESCRIPTION:
        problems.append(Problem("toolregistry.E005", f"{meta.name}: description must have 1 to {MAX_DESCRIPTION} characters"))
    schema = definition.input_schema
    problems.extend(_schema_problems(
        "toolregistry.E013", f"{meta.name}: input schema", schema,
        schema.get("type") == "object" and schema.get("additionalProperties") is False,
        "must be an object refusing unknown arguments"))
    try:
        output = output_schema(definition)
    except NotAProjection as exc:
        problems.append(Problem("toolregistry.E015", f"{meta.name}: no output schema: {exc}"))
    else:
        problems.extend(_schema_problems(
            "toolregistry.E015", f"{meta.name}: output schema", output, output.get("type") == "object",
            "must describe an object"))
    if meta.approval is Approval.PRE_EXECUTE and definition.describe_approval is None:
        problems.append(Problem("toolregistry.E014", f"{meta.name}: a pre-execute tool must describe its approval card"))
    return problems
