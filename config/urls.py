from django.contrib import admin
from django.urls import include, path

from arkme.kernel.metrics import metrics_view
from toolregistry.api.urls import urlpatterns as dsh_api

from .dashboard import dashboard
from .health import healthz, readyz

admin.site.site_header = "Arkme tool registry"
admin.site.site_title = "Arkme tool registry"
# The service has no public site to view: the link would lead to a 404.
admin.site.site_url = None

# The machine paths first: every DSH call is resolved, and patterns are tried in order.
urlpatterns = [
    *dsh_api,
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/dashboard/", admin.site.admin_view(dashboard), name="arkme_dashboard"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("groups/", include("groups.urls")),
    path("approvals/", include("toolregistry.pages.grants")),
    path("approvals/", include("toolregistry.pages.urls")),
]

handler400 = "toolregistry.api.exceptions.bad_request"
handler404 = "toolregistry.api.exceptions.not_found"
handler500 = "toolregistry.api.exceptions.server_error"
