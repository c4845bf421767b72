"""The DSH API's routes: the REST views and each session's MCP endpoint.

The routes are written out in full under ``PREFIX`` and listed first in the project's
URLconf, not mounted with ``include()``: every DSH call is resolved, and each level of
``include()`` cost a resolver of its own (its prefix matched, a partial match built and
merged, and a ``Resolver404`` raised and caught where a prefix did not match), about as much
as the rest of a cheap call's routing. Names are ``dsh-…``, the namespace the API had. The
schema and its documentation pages are not on a call's path and keep their namespace.
"""
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from ..mcp.door import session_mcp
from . import views

PREFIX = "dsh/v1/"
_SESSION = f"{PREFIX}sessions/<str:session>"

_documentation = ([
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="dsh:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="dsh:schema"), name="redoc"),
], "dsh")

# The calls DSH makes most come first. Every route is anchored at both ends, so their order
# changes what is tried, never what matches.
urlpatterns: list[URLPattern | URLResolver] = [
    path(_SESSION, views.SessionApi.as_view(), name="dsh-session"),
    path(f"{_SESSION}/tools/<str:name>/execute", views.ExecuteApi.as_view(), name="dsh-execute"),
    path(f"{_SESSION}/mcp", session_mcp, name="dsh-mcp"),
    path(f"{_SESSION}/tools/<str:name>/pre-execute", views.PreExecuteApi.as_view(), name="dsh-pre-execute"),
    path(f"{_SESSION}/messages", views.MessagesApi.as_view(), name="dsh-messages"),
    path(f"{_SESSION}/approvals/<str:approval>", views.ApprovalStatusApi.as_view(), name="dsh-approval-status"),
    path(f"{_SESSION}/phases/attachments", views.AttachmentsPhaseApi.as_view(), name="dsh-attachments"),
    path(f"{PREFIX}sessions", views.SessionsApi.as_view(), name="dsh-sessions"),
    path(f"{PREFIX}catalog", views.CatalogApi.as_view(), name="dsh-catalog"),
    path(PREFIX, include(_documentation)),
]
