from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import pre_migrate


def _migrations_without_statement_timeout(using: str = "default", **kwargs: Any) -> None:
    """A migration may rightly take longer than any request (an index on a large table): the
    statement timeout that bounds requests (DATABASE_STATEMENT_TIMEOUT) is lifted for the
    connection that migrates, in the process that runs ``migrate`` only."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")


class ArkmeConfig(AppConfig):
    """The project itself: the composition root, the demo world and its command, templates.

    Its label stays ``arkme``, as it was before the package was named ``config``: settings,
    tests and the admin name the app by its label."""

    name = "config"
    label = "arkme"
    verbose_name = "Arkme"

    def ready(self) -> None:
        pre_migrate.connect(_migrations_without_statement_timeout, dispatch_uid="arkme-migrate-statement-timeout")
        from toolregistry.ports import install_ports

        from . import checks  # noqa: F401 - registers the deployment checks
        from .composition import build_ports

        install_ports(build_ports())
        from arkme.kernel.tracing import configure_tracing

        configure_tracing()
