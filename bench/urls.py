import os

from django.urls import include, path

from arkme.urls import urlpatterns as product

from .bare import BareSessionView, FloorCandidatesView
from .web_floors import FloorContextView, FloorSessionView

# Under one prefix, so the product's requests pass one pattern of the bench's, not four,
# before they reach its own as they do in production.
urlpatterns = [
    path("bench/", include([
        path("bare/<str:session>", BareSessionView.as_view()),
        path("floor/<str:session>/candidates", FloorCandidatesView.as_view()),
        path("floor/session/<str:session>", FloorSessionView.as_view()),
        path("floor/<str:session>/context", FloorContextView.as_view()),
    ])),
    *product,
]

# The MCP benchmarks serve a catalog of N tools through the product's own path.
if os.environ.get("ARKME_BENCH_MCP_TOOLS"):
    from .mcp_tools import install

    install(int(os.environ["ARKME_BENCH_MCP_TOOLS"]))
