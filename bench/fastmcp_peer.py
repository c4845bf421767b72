"""The peer: the same tool definitions served by FastMCP 4, in its recommended stateless HTTP
deployment (``http_app(stateless_http=True, json_response=True)`` under uvicorn).

Each tool checks its arguments against the same JSON Schema with the same validator the
product uses (FastMCP does not validate the arguments of a tool defined by schema), and the
echo tool returns what the product's does. The definitions come from the file named by
``ARKME_BENCH_TOOLS_FILE``: the product's own ``tools/list`` output.
"""
from __future__ import annotations

import json
import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult
from jsonschema import Draft202012Validator
from mcp_types import TextContent

from bench.mcp_tools import ECHO, echo

# Each tool's validator, built once as the product builds its own (a validator per call cost
# the peer about 5 µs more than the check itself).
_VALIDATORS: dict[str, Draft202012Validator] = {}


class SchemaTool(Tool):
    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        errors = list(_VALIDATORS[self.name].iter_errors(arguments))
        if errors:
            refusal = {"error": {"code": "invalid_arguments", "message": "The arguments are not valid."}}
            return ToolResult(content=[TextContent(type="text", text=json.dumps(refusal))],
                              structured_content=refusal, is_error=True)
        result = echo(arguments) if self.name == ECHO else {}
        return ToolResult(content=[TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
                          structured_content=result)


def peer() -> FastMCP:
    server = FastMCP("peer")
    with open(os.environ["ARKME_BENCH_TOOLS_FILE"], encoding="utf-8") as handle:
        for definition in json.load(handle):
            _VALIDATORS[definition["name"]] = Draft202012Validator(definition["inputSchema"])
            server.add_tool(SchemaTool(
                name=definition["name"], title=definition.get("title"), description=definition["description"],
                parameters=definition["inputSchema"], output_schema=definition.get("outputSchema"),
                annotations=definition.get("annotations"),
            ))
    return server


app = peer().http_app(path="/mcp", stateless_http=True, json_response=True) \
    if os.environ.get("ARKME_BENCH_TOOLS_FILE") else None
