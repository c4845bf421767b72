"""The DSH API's routes: the REST views and each session's MCP endpoint."""
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from ..mcp.door import session_mcp
from . import views

app_name = "dsh"

# A session's routes share one prefix, matched once; the calls DSH makes most come first.
# Every route ends where it is anchored, so their order changes what is tried, never what matches.
session_patterns = [
    path("tools/<str:name>/execute", views.ExecuteApi.as_view(), name="execute"),
    path("mcp", session_mcp, name="mcp"),
    path("tools/<str:name>/pre-execute", views.PreExecuteApi.as_view(), name="pre-execute"),
    path("messages", views.MessagesApi.as_view(), name="messages"),
    path("approvals/<str:approval>", views.ApprovalStatusApi.as_view(), name="approval-status"),
    path("phases/attachments", views.AttachmentsPhaseApi.as_view(), name="attachments"),
]

# The session view before the session's routes: a route that does not match costs one regular
# expression, while a prefix that does not match raises (and catches) Django's Resolver404.
urlpatterns = [
    path("sessions/<str:session>", views.SessionApi.as_view(), name="session"),
    path("sessions/<str:session>/", include(session_patterns)),
    path("sessions", views.SessionsApi.as_view(), name="sessions"),
    path("catalog", views.CatalogApi.as_view(), name="catalog"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="dsh:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="dsh:schema"), name="redoc"),
]
