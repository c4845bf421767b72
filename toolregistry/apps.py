from django.apps import AppConfig
from django.conf import settings


class ToolRegistryConfig(AppConfig):
    name = "toolregistry"
    verbose_name = "Tool registry"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the catalog check)
        from .approval_page import check_page_tools_setting
        from .limits import limits_validate

        # A limit or a page tool the catalog does not have stops start-up in every process, as a
        # malformed setting does.
        limits_validate(settings.ARKME_RATE_LIMITS)
        check_page_tools_setting()
