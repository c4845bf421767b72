"""Bearer client keys for the DSH API."""
from __future__ import annotations

from typing import Any, cast

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from arkme.conversations.clients import bearer_key, client_for_key
from arkme.conversations.models import AgentSession, DshClient
from arkme.conversations.sessions import session_for_key
from arkme.kernel.errors import WWW_AUTHENTICATE, NotAuthenticated, NotFound


class DshClientAuthentication(BaseAuthentication):
    """The bearer client key. On a view marked ``session_bound`` (the views under
    ``sessions/{session}`` whose service does not read the session itself) the key check and
    the session read are one statement, the session's checks (open, not idle, active account)
    included: the client goes where DRF puts a user, the session where it puts the
    credentials. An unknown key is 401 either way; a session the client may not use is the
    view's one 404, raised when the view asks for it, so a method the view does not serve is
    still 405."""

    def authenticate(self, request: Request) -> tuple[DshClient, Any] | None:
        key = bearer_key(request.META.get("HTTP_AUTHORIZATION", ""))
        if key is None:
            return None
        context = request.parser_context or {}
        if getattr(context.get("view"), "session_bound", False):
            try:
                return session_for_key(key, str(context["kwargs"]["session"]))
            except NotFound as missing:
                client = client_for_key(key)  # the key is valid (else 401 above): only the 404 path reads it again
                if client is None:
                    raise NotAuthenticated("The client key is not valid.") from None
                # Without its traceback: that names this frame, which names the request, and
                # the request would hold the error that holds it (see DshApiView).
                return client, missing.with_traceback(None)
        client = client_for_key(key)
        if client is None:
            # Unknown and revoked keys are told apart in the admin, not to the caller.
            raise NotAuthenticated("The client key is not valid.")
        return client, client

    def authenticate_header(self, request: Request) -> str:
        return WWW_AUTHENTICATE


def request_session(request: Request) -> AgentSession:
    """The session the authentication read for this ``session_bound`` view, or its 404."""
    auth = request.auth
    if isinstance(auth, AgentSession):
        return auth
    # Not kept in this frame: the error raised from here would name it through its traceback.
    del auth
    if isinstance(request.auth, NotFound):
        raise _taken_error(request)
    raise TypeError("the view is not session_bound")


def _taken_error(request: Request) -> NotFound:
    """The 404 the authentication left, taken off the request: raised from there, its
    traceback would name the request that holds it (see DshApiView)."""
    error = request.auth
    request.auth = None
    return cast(NotFound, error)


class DshClientAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "toolregistry.api.authentication.DshClientAuthentication"
    name = "dshClientKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A DSH client key."}
