"""The composition root, above every domain: settings, URLs, the WSGI/ASGI entry points, the
Celery app, the binding of Ports, the demo world and the staff dashboard.

The Celery app is loaded with the project (``DJANGO_SETTINGS_MODULE=config.settings`` imports
this package), so every task the domains declare with ``shared_task`` binds to it.
"""
from .celery import app as celery_app

__all__ = ("celery_app",)
