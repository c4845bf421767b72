"""Sessions, the signed-in user and flash messages for the pages people open, not for the
paths machines call.

DSH, MCP hosts, probes and the metrics scraper send a bearer key (or nothing) on every
request and never a session cookie; nothing on those paths reads ``request.session``,
Django's ``request.user`` or ``messages``. Django's session, authentication and message
middleware still set all three up on every request, and the message middleware looks at the
session again on every response: 60-100 µs of CPU a call for no reader. The subclasses below
are those middleware, unchanged, except that they step aside for the machine paths
(``ARKME_MACHINE_PATHS``, prefixes of the request's path). A browser's session cookie sent
to a machine path is therefore never loaded: it means nothing there, as it should.

CSRF stays on every path: its view hook must see every view, and machine views are exempt
by their own decorator. The classes keep Django's names as their bases, so the admin's
system checks still find the middleware it needs.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse


class _BrowserOnly:
    """Run the middleware it is mixed into for browser paths only."""

    get_response: Callable[[HttpRequest], Any]

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        super().__init__(get_response)  # type: ignore[call-arg]
        # Read once: settings do not change under a built middleware chain (a test that
        # overrides them gets a new chain from its new handler).
        self._machine_paths = tuple(settings.ARKME_MACHINE_PATHS)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith(self._machine_paths):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]


class BrowserSessionMiddleware(_BrowserOnly, SessionMiddleware):
    pass


class BrowserAuthenticationMiddleware(_BrowserOnly, AuthenticationMiddleware):
    pass


class BrowserMessageMiddleware(_BrowserOnly, MessageMiddleware):
    pass
