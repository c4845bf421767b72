"""Bearer client keys for the DSH API."""
from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from arkme.conversations.clients import client_for_key
from arkme.conversations.models import DshClient
from arkme.kernel.errors import NotAuthenticated


class DshClientAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[DshClient, DshClient] | None:
        header = get_authorization_header(request).split()
        if not header:
            return None
        if header[0].lower() != b"bearer" or len(header) != 2:
            raise NotAuthenticated("Use 'Authorization: Bearer <client key>'.")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise NotAuthenticated("The client key is not valid.") from exc
        client = client_for_key(key)
        if client is None:
            # Unknown and revoked keys are told apart in the admin, not to the caller.
            raise NotAuthenticated("The client key is not valid.")
        return client, client

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="dsh"'


class DshClientAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "toolregistry.api.authentication.DshClientAuthentication"
    name = "dshClientKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A DSH client key."}
