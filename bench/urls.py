"""The benchmarks' root URLconf: the product's own patterns, in the product's order (the
floors have their own URLconf, ``bench.floor_urls``, chosen by ``bench.middleware``)."""
import os

from config.urls import handler400, handler404, handler500  # noqa: F401 - the product's error views
from config.urls import urlpatterns as product

urlpatterns = list(product)

if os.environ.get("ARKME_BENCH_MCP_TOOLS"):
    from .mcp_tools import install

    install(int(os.environ["ARKME_BENCH_MCP_TOOLS"]))
