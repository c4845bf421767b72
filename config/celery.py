"""The Celery application. Task messages are JSON, results msgpack (a rendered PNG comes back as
bytes); tasks run in-process when no broker is configured."""
from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, signals
from kombu.utils.objects import cached_property

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)
# The message header that carries the request id from the web process to the task.
REQUEST_ID_HEADER = "arkme_request_id"


class Arkme(Celery):
    """Celery whose worker and beat print no banner: their startup is one JSON log line like
    every other (the banner is plain text on stdout)."""

    @cached_property
    def Worker(self) -> Any:
        from celery.apps.worker import Worker

        class QuietWorker(Worker):
            def emit_banner(self) -> None:
                logger.info("worker starting: %s", self.startup_info(artlines=False).strip())

            def install_platform_tweaks(self, worker: Any) -> None:
                # The same shutdown handlers without their plain "worker: Warm shutdown" print;
                # the shutdown is logged from the worker_shutting_down signal instead.
                super().install_platform_tweaks(worker)
                from celery.apps import worker as program

                for name in ("install_worker_term_handler", "install_worker_term_hard_handler",
                             "install_worker_int_handler"):
                    getattr(program, name)(worker, verbose=False)

        return self.subclass_with_self(QuietWorker)

    @cached_property
    def Beat(self) -> Any:
        from celery.apps.beat import Beat

        class QuietBeat(Beat):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.quiet = True

        return self.subclass_with_self(QuietBeat)


app = Arkme("arkme")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Results carry blob fingerprints and rendered images: the worker's "succeeded" log line names
# the task, its id and its run time, never the result (Celery would print up to 1 KiB of it).
app.Task.resultrepr_maxsize = 0
# Each task module sits next to what it wraps; all of them are listed here.
app.autodiscover_tasks(["galleries", "galleries.blobs", "groups", "toolregistry"])
app.autodiscover_tasks(["galleries.ingest"], related_name="svg_render")


@signals.setup_logging.connect
def _django_logging(**kwargs: Any) -> None:
    """Worker and beat log through Django's LOGGING (JSON lines with the request id), not
    Celery's own plain format: connecting this signal stops Celery configuring logging."""
    from django.conf import settings

    from arkme.kernel.logs import configure

    configure(settings.LOGGING)


@signals.worker_shutting_down.connect
def _worker_stopping(sig: str = "", how: str = "", **kwargs: Any) -> None:
    logger.info("worker: %s shutdown on %s", how, sig)


@signals.beat_init.connect
def _beat_started(sender: Any = None, **kwargs: Any) -> None:
    logger.info("beat starting: %s", getattr(getattr(sender, "scheduler", None), "info", "") or "scheduler ready")


@signals.before_task_publish.connect
def _carry_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """A task sent while a request is served carries its id in the message's headers."""
    from arkme.kernel.logs import current_request_id

    request_id = current_request_id()
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


_bound: dict[str, Any] = {}


@signals.task_prerun.connect
def _adopt_request_id(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    """The worker's lines for a task carry the id of the request that sent it, while it runs."""
    from arkme.kernel.logs import bind_request_id

    request_id = getattr(getattr(task, "request", None), REQUEST_ID_HEADER, None)
    if task_id and isinstance(request_id, str) and request_id:
        _bound[task_id] = bind_request_id(request_id)


@signals.task_postrun.connect
def _drop_request_id(task_id: str | None = None, **kwargs: Any) -> None:
    token = _bound.pop(task_id or "", None)
    if token is not None:
        from arkme.kernel.logs import unbind_request_id

        unbind_request_id(token)
