from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from . import mcp, views

app_name = "dsh"

urlpatterns = [
    path("catalog", views.CatalogApi.as_view(), name="catalog"),
    path("sessions", views.SessionsApi.as_view(), name="sessions"),
    path("sessions/<str:session>", views.SessionApi.as_view(), name="session"),
    path("sessions/<str:session>/phases/attachments", views.AttachmentsPhaseApi.as_view(), name="attachments"),
    path("sessions/<str:session>/messages", views.MessagesApi.as_view(), name="messages"),
    path("sessions/<str:session>/tools/<str:name>/pre-execute", views.PreExecuteApi.as_view(), name="pre-execute"),
    path("sessions/<str:session>/tools/<str:name>/execute", views.ExecuteApi.as_view(), name="execute"),
    path("sessions/<str:session>/mcp", mcp.session_mcp, name="mcp"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="dsh:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="dsh:schema"), name="redoc"),
]
