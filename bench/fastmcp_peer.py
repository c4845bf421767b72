"""The peer: the same tool definitions served by FastMCP 4, in its recommended stateless HTTP
deployment (``http_app(stateless_http=True, json_response=True)`` under ``uvicorn[standard]``,
uvloop and httptools; the command line is ``mcp_serving.peer_arguments``).

Each tool checks its arguments against the same JSON Schema with the same validator the
product uses (FastMCP does not validate the arguments of a tool defined by schema), and the
echo tool returns what the product's does. The definitions come from the file named by
``ARKME_BENCH_TOOLS_FILE``: the product's own ``tools/list`` output.
"""
from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult
from jsonschema import Draft202012Validator
from mcp_types import TextContent

from bench.echo import ECHO, echo  # nothing of Django: uvicorn's workers do not set it up

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


# Where the bench asks a running peer what it runs on (``mcp_serving.start_peer``).
RUNTIME_PATH = "/_bench/runtime"


def runtime(receive: Any) -> dict[str, str]:
    """The event loop and the HTTP protocol this worker serves with, read from the running loop
    and from uvicorn's own ``receive`` (a method of its protocol module's request cycle)."""
    loop = type(asyncio.get_running_loop())
    protocol = type(getattr(receive, "__self__", receive))
    return {"loop": f"{loop.__module__}.{loop.__qualname__}",
            "http": f"{protocol.__module__}.{protocol.__qualname__}"}


def with_runtime(inner: Any) -> Any:
    """``inner`` with one extra path that answers ``runtime``: a string comparison on each
    request, nothing else, so the peer's MCP path is FastMCP's own."""
    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == RUNTIME_PATH:
            body = json.dumps(runtime(receive)).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await inner(scope, receive, send)
    return app


app = with_runtime(peer().http_app(path="/mcp", stateless_http=True, json_response=True)) \
    if os.environ.get("ARKME_BENCH_TOOLS_FILE") else None
