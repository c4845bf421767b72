"""The MCP benchmarks' call target, ``arkme_bench_echo``: its name, schemas and answer.

Apart from ``bench.mcp_tools`` because the peer (``bench.fastmcp_peer``) imports it too, in
uvicorn's workers, where nothing of Django is set up: this module imports nothing of the product.
"""
from __future__ import annotations

from typing import Any

ECHO = "arkme_bench_echo"
ECHO_INPUT = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 200}},
              "required": ["text"], "additionalProperties": False}
ECHO_OUTPUT = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"],
               "additionalProperties": False}


def echo(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"echo": arguments["text"]}
