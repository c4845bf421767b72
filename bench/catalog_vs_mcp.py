"""Compiling and listing the business profile's tool definitions, against the MCP Python
SDK's in-process ``list_tools`` for the same tools."""
from __future__ import annotations

import asyncio

from .common import Result, median_seconds, paired_medians

CALLS = 2000


def run() -> Result:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from toolregistry.catalog import CATALOG
    from toolregistry.metadata import Phase
    from toolregistry.registrar import Registrar, registrar

    phases = [Phase.CORE, Phase.ATTACHMENTS]
    definitions = registrar.toolset("business", phases).definitions()
    server = Server("bench")

    @server.list_tools()
    async def list_tools():
        return [types.Tool(name=d["name"], description=d["description"], inputSchema=d["input_schema"],
                           annotations=types.ToolAnnotations(**d["metadata"]["annotations"])) for d in definitions]

    handler = server.request_handlers[types.ListToolsRequest]
    request = types.ListToolsRequest(method="tools/list")
    loop = asyncio.new_event_loop()

    def mcp_list():
        for _ in range(CALLS):
            loop.run_until_complete(handler(request))

    def ours():
        for _ in range(CALLS):
            registrar.toolset("business", phases).definitions()

    def ours_cold():
        Registrar(CATALOG).toolset("business", phases).definitions()

    product, theirs = paired_medians(ours, mcp_list)
    cold = median_seconds(ours_cold, rounds=9)
    loop.close()
    ratio = product / theirs
    return Result("catalog_vs_mcp", round(ratio, 4), "× MCP list_tools", "the MCP Python SDK's in-process list_tools",
                  "≤ 1.0×", ratio <= 1.0, {"product_us": round(product / CALLS * 1e6, 2),
                                           "mcp_us": round(theirs / CALLS * 1e6, 2),
                                           "cold_compile_ms": round(cold * 1000, 3), "tools": len(definitions)})
