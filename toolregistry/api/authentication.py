"""Bearer client keys for the DSH API."""
from __future__ import annotations

from typing import Any, NamedTuple

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from arkme.conversations.clients import bearer_key, client_for_key
from arkme.conversations.models import AgentSession, DshClient
from arkme.conversations.sessions import session_for_key, unknown_session
from arkme.kernel.errors import WWW_AUTHENTICATE, NotAuthenticated, NotFound


class DshCredentials(NamedTuple):
    """What DRF keeps as ``request.auth`` on every view of the DSH API: the client the key
    names and, on a ``session_bound`` view, the session it may use there, or that it may use
    none (the 404 is raised when the view asks for the session, so a method the view does not
    serve is still 405). No error is kept: its traceback would name the request that holds it."""

    client: DshClient
    session: AgentSession | None = None
    session_refused: bool = False


class DshClientAuthentication(BaseAuthentication):
    """The bearer client key. On a view marked ``session_bound`` (the views under
    ``sessions/{session}`` whose service does not read the session itself) the key check and
    the session read are one statement, the session's checks (open, not idle, active account)
    included. An unknown key is 401 either way."""

    def authenticate(self, request: Request) -> tuple[DshClient, DshCredentials] | None:
        key = bearer_key(request.META.get("HTTP_AUTHORIZATION", ""))
        if key is None:
            return None
        context = request.parser_context or {}
        if getattr(context.get("view"), "session_bound", False):
            try:
                bound, session = session_for_key(key, str(context["kwargs"]["session"]))
            except NotFound:
                found = client_for_key(key)  # the key is valid (else 401 above): only the 404 path reads it again
                if found is None:
                    raise NotAuthenticated("The client key is not valid.") from None
                return found, DshCredentials(found, session_refused=True)
            return bound, DshCredentials(bound, session=session)
        client = client_for_key(key)
        if client is None:
            # Unknown and revoked keys are told apart in the admin, not to the caller.
            raise NotAuthenticated("The client key is not valid.")
        return client, DshCredentials(client)

    def authenticate_header(self, request: Request) -> str:
        return WWW_AUTHENTICATE


def request_session(request: Request) -> AgentSession:
    """The session the authentication read for this ``session_bound`` view, or its 404."""
    credentials = request.auth
    if not isinstance(credentials, DshCredentials) or (credentials.session is None
                                                       and not credentials.session_refused):
        raise TypeError("the view is not session_bound")
    if credentials.session is None:
        raise unknown_session()
    return credentials.session


class DshClientAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "toolregistry.api.authentication.DshClientAuthentication"
    name = "dshClientKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A DSH client key."}
