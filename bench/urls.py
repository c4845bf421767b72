import os

from django.urls import path

from arkme.urls import urlpatterns as product

from .bare import BareSessionView, FloorCandidatesView
from .web_floors import FloorContextView, FloorSessionView

urlpatterns = [
    path("bench/bare/<str:session>", BareSessionView.as_view()),
    path("bench/floor/<str:session>/candidates", FloorCandidatesView.as_view()),
    path("bench/floor/session/<str:session>", FloorSessionView.as_view()),
    path("bench/floor/<str:session>/context", FloorContextView.as_view()),
    *product,
]

# The MCP benchmarks serve a catalog of N tools through the product's own path.
if os.environ.get("ARKME_BENCH_MCP_TOOLS"):
    from .mcp_tools import install

    install(int(os.environ["ARKME_BENCH_MCP_TOOLS"]))
