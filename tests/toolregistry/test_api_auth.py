"""Client keys: missing, unknown, revoked and malformed keys are 401 with the envelope."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from arkme.conversations.clients import dsh_client_revoke, dsh_client_rotate
from arkme.conversations.models import DshClient
from tests.support.errors import assert_error


def assert_401(response):
    assert_error(response, 401, "not_authenticated")


@pytest.mark.django_db
@pytest.mark.parametrize("header", [None, "Bearer", "Bearer dsh_wrong", "Basic abc", "Bearer a b", "Token dsh_x"])
def test_missing_or_wrong_key_is_401(header):
    api = APIClient()
    if header:
        api.credentials(HTTP_AUTHORIZATION=header)
    assert_401(api.get("/dsh/v1/catalog"))


def test_valid_key_is_accepted(dsh):
    assert dsh.get("catalog").status_code == 200


def test_revoked_key_is_401(dsh):
    dsh_client_revoke(name=dsh.client.name)
    assert_401(dsh.get("catalog"))


def test_rotated_key_replaces_the_old(dsh):
    _, new_key = dsh_client_rotate(name=dsh.client.name)
    assert_401(dsh.get("catalog"))
    dsh.api.credentials(HTTP_AUTHORIZATION=f"Bearer {new_key}")
    assert dsh.get("catalog").status_code == 200


def test_only_a_hash_of_the_key_is_stored(dsh):
    row = DshClient.objects.get(pk=dsh.client.pk)
    stored = " ".join(str(value) for value in row.__dict__.values())
    assert dsh.key not in stored
    assert dsh.key[len(row.key_prefix):] not in stored


def test_unauthenticated_session_calls_are_401(dsh, world):
    session = dsh.open_session(world.alice)["session"]
    anonymous = APIClient()
    assert_401(anonymous.get(f"/dsh/v1/sessions/{session}"))
    assert_401(anonymous.post(f"/dsh/v1/sessions/{session}/tools/arkme_context/execute", {"arguments": {}}, format="json"))


def test_schema_is_public(db):
    response = APIClient().get("/dsh/v1/schema/?format=json")
    assert response.status_code == 200


def test_rotating_a_revoked_client_keeps_it_revoked_unless_asked(dsh):
    from arkme.kernel.errors import Conflict

    dsh_client_revoke(name=dsh.client.name)
    with pytest.raises(Conflict) as raised:
        dsh_client_rotate(name=dsh.client.name)
    assert raised.value.code == "client_revoked"
    dsh.client.refresh_from_db()
    assert dsh.client.revoked_at is not None
    _, key = dsh_client_rotate(name=dsh.client.name, reactivate=True)
    dsh.api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert dsh.get("catalog").status_code == 200


def test_the_rotate_command_refuses_a_revoked_client_without_reactivate(dsh):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    dsh_client_revoke(name=dsh.client.name)
    with pytest.raises(CommandError, match="revoked"):
        call_command("arkme_dsh_client", "rotate", dsh.client.name, stdout=io.StringIO())
    out = io.StringIO()
    call_command("arkme_dsh_client", "rotate", dsh.client.name, "--reactivate", stdout=out)
    assert out.getvalue().strip().splitlines()[-1].startswith("dsh_")


SESSION_BOUND = [
    ("get", "sessions/{}", None),
    ("post", "sessions/{}/messages", {"id": "m1", "text": "hi"}),
    ("post", "sessions/{}/tools/arkme_context/pre-execute", {"arguments": {}}),
    ("post", "sessions/{}/tools/arkme_context/execute", {"arguments": {}}),
    ("delete", "sessions/{}", None),
]


@pytest.mark.parametrize(("method", "path", "body"), SESSION_BOUND)
@pytest.mark.parametrize("header", ["Bearer dsh_wrong", "Bearer a b", "Basic abc"])
def test_a_bad_key_on_a_session_view_is_401_whatever_the_session(dsh, other_dsh, world, method, path, body, header):
    """The key and the session are read in one statement; a bad key is still told as a bad key,
    never as a missing session, whether the session exists or not."""
    session = dsh.open_session(world.alice)["session"]
    for public_id in (session, "ses_unknown"):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=header)
        assert_401(getattr(api, method)(f"/dsh/v1/{path.format(public_id)}", body, format="json"))


@pytest.mark.parametrize(("method", "path", "body"), SESSION_BOUND)
def test_a_valid_key_on_a_session_it_may_not_use_is_the_one_404(dsh, other_dsh, world, method, path, body):
    session = dsh.open_session(world.alice)["session"]
    for public_id in (session, "ses_unknown"):
        response = getattr(other_dsh.api, method)(f"/dsh/v1/{path.format(public_id)}", body, format="json")
        assert_error(response, 404, "unknown_session")
    revoked = dsh_client_revoke(name=dsh.client.name)
    assert revoked.revoked_at is not None
    assert_401(getattr(dsh.api, method)(f"/dsh/v1/{path.format(session)}", body, format="json"))


def test_a_method_a_session_view_does_not_serve_is_405_even_for_an_unknown_session(dsh):
    response = dsh.api.put("/dsh/v1/sessions/ses_unknown", {}, format="json")
    assert_error(response, 405, "method_not_allowed")


@pytest.mark.parametrize("form", ["{key}", "bearer {key}", "BEARER {key}", "  Bearer   {key}  ", "Basic {key}",
                                  "Bearer {key} extra", "Bearer", "Token {key}", "Bearer{key}"])
def test_both_doors_read_the_authorization_header_by_one_rule(dsh, session, form):
    """REST and MCP take or refuse the same headers (one bearer rule), and refuse alike."""
    header = form.format(key=dsh.key) if form != "{key}" else dsh.key
    anonymous = APIClient()
    rest = anonymous.get(f"/dsh/v1/sessions/{session}", HTTP_AUTHORIZATION=header)
    mcp = anonymous.post(f"/dsh/v1/sessions/{session}/mcp", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                         content_type="application/json", HTTP_AUTHORIZATION=header,
                         HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
    if rest.status_code == 200:
        assert mcp.status_code == 200, mcp.content
    else:
        assert_401(rest)
        assert_401(mcp)
        assert mcp.json() == rest.json()
