"""WSGI entry point (gunicorn config.wsgi)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from arkme.kernel.chunked import ChunkedBodies  # noqa: E402  (after the settings are named)

# Django takes a request without a Content-Length to have no body; see arkme.kernel.chunked.
application = ChunkedBodies(django_application)
