"""``mcp_call``: a ``tools/call`` of a cheap read on the wire, the product against FastMCP 4
(see mcp_serving)."""
from .common import Result
from .mcp_serving import measure


def run() -> Result:
    return measure("call")
