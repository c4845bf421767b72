"""Every result a tool returns must fit its declared output schema (its MCP ``outputSchema``,
its OpenAPI ``ToolResult_<name>``); the suite checks each one it sees."""
from __future__ import annotations

import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

EXECUTE = re.compile(r"^/dsh/v1/sessions/[^/]+/tools/([a-z0-9_]+)/execute$")


@cache
def validator(name: str) -> Draft202012Validator | None:
    from toolregistry.catalog import CATALOG

    for module in CATALOG.modules:
        if module.METADATA.name == name:
            return Draft202012Validator(module.definition().output_schema, format_checker=FormatChecker())
    return None


def result_problems(path: str, body: Any) -> list[str]:
    match = EXECUTE.match(path)
    if not match or not isinstance(body, dict) or "result" not in body:
        return []
    checker = validator(match.group(1))
    if checker is None:
        return []
    return [f"{'/'.join(map(str, error.absolute_path)) or 'result'}: {error.message[:200]}"
            for error in checker.iter_errors(body["result"])]
