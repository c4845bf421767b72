from django.apps import AppConfig


class ArkmeConfig(AppConfig):
    """The project itself: the composition root, the demo world and its command, templates."""

    name = "arkme"
    verbose_name = "Arkme"

    def ready(self) -> None:
        from toolregistry.ports import install_ports

        from . import checks  # noqa: F401 - registers the deployment checks
        from .composition import build_ports

        install_ports(build_ports())
        from .kernel.tracing import configure_tracing

        configure_tracing()
