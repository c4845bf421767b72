from typing import Any

from django.apps import AppConfig


class GalleriesConfig(AppConfig):
    name = "galleries"
    verbose_name = "Extension galleries"

    def ready(self) -> None:
        from arkme.conversations.signals import sessions_ended

        sessions_ended.connect(_end_pending_adds, dispatch_uid="galleries.end_pending_adds")
        from arkme.kernel.metrics import register_database_collector

        from .metrics import PendingOperationsCollector

        register_database_collector(PendingOperationsCollector())


def _end_pending_adds(sender: Any, session_ids: list[int], **kwargs: Any) -> None:
    from .services.gallery_add import operations_end_for_sessions

    operations_end_for_sessions(session_ids)
