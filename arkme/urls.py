from django.contrib import admin
from django.urls import include, path

from .health import ReadinessView, healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", ReadinessView.as_view(), name="readyz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("dsh/v1/", include("toolregistry.api.urls")),
    path("groups/", include("groups.urls")),
]

handler404 = "toolregistry.api.exceptions.not_found"
handler500 = "toolregistry.api.exceptions.server_error"
