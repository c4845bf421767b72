from django.apps import AppConfig


class ToolRegistryConfig(AppConfig):
    name = "toolregistry"
    verbose_name = "Tool registry"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the catalog check)
