from django.apps import AppConfig
from django.conf import settings


class ToolRegistryConfig(AppConfig):
    name = "toolregistry"
    verbose_name = "Tool registry"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the catalog check)
        from .limits import limits_validate

        # A limit on a tool the catalog does not have stops start-up, as a malformed one does.
        limits_validate(settings.ARKME_RATE_LIMITS)
