"""Every result a tool returns must fit its declared output schema (its MCP ``outputSchema``,
its OpenAPI ``ToolResult_<name>``); the suite checks each one it sees."""
from __future__ import annotations

import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

EXECUTE = re.compile(r"^/dsh/v1/sessions/[^/]+/tools/([a-z0-9_]+)/execute$")
MCP_CALL = re.compile(r"^/dsh/v1/sessions/[^/]+/mcp#([a-z0-9_]+)$")


@cache
def validator(name: str) -> Draft202012Validator | None:
    from toolregistry.catalog import CATALOG

    for module in CATALOG.modules:
        if module.METADATA.name == name:
            return Draft202012Validator(module.definition().output_schema, format_checker=FormatChecker())
    return None


def _tool_result(path: str, body: Any) -> tuple[str, Any] | None:
    """The tool and its result in a REST execute or an MCP ``tools/call`` success, else None."""
    if not isinstance(body, dict) or not isinstance(body.get("result"), dict):
        return None
    if match := EXECUTE.match(path):
        return match.group(1), body["result"]
    if (match := MCP_CALL.match(path)) and body["result"].get("isError") is False:
        return match.group(1), body["result"].get("structuredContent")
    return None


def result_problems(path: str, body: Any) -> list[str]:
    found = _tool_result(path, body)
    if found is None:
        return []
    checker = validator(found[0])
    if checker is None:
        return []
    return [f"{'/'.join(map(str, error.absolute_path)) or 'result'}: {error.message[:200]}"
            for error in checker.iter_errors(found[1])]
