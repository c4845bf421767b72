from django.apps import AppConfig


class ToolRegistryConfig(AppConfig):
    name = "toolregistry"
    verbose_name = "Tool registry"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the catalog check)
        from .approval_page import check_page_tools_setting

        # Every process refuses to start with a page tool the catalog does not have.
        check_page_tools_setting()
