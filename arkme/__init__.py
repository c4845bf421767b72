"""The Arkme project package: settings, URLs, the Celery app and the core account domain."""
from .celery import app as celery_app

__all__ = ("celery_app",)
