"""WSGI entry point (gunicorn config.wsgi)."""
import os

from arkme.kernel.native_memory import limit_malloc_arenas

# Before any thread of the worker allocates: threads then share one arena, so what libvips'
# decoder frees is there for its encoder (arkme.kernel.native_memory).
limit_malloc_arenas()

from django.core.wsgi import get_wsgi_application  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from arkme.kernel.chunked import ChunkedBodies  # noqa: E402  (after the settings are named)

# Django takes a request without a Content-Length to have no body; see arkme.kernel.chunked.
application = ChunkedBodies(django_application)
