"""``mcp_tools_list``: ``tools/list`` on the wire, the product against FastMCP 4 (see mcp_serving)."""
from .common import Result
from .mcp_serving import measure


def run() -> Result:
    return measure("tools_list")
