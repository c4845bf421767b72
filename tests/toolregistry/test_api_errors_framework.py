"""Refusals the framework raises leave as every refusal does: the envelope and its headers."""
from __future__ import annotations

from rest_framework import exceptions as drf

from tests.support.errors import assert_error
from toolregistry.api.exceptions import dsh_exception_handler


def test_a_framework_throttle_says_when_to_retry():
    response = dsh_exception_handler(drf.Throttled(wait=2.3), {})
    assert response.status_code == 429
    assert response.data == {"error": {"code": "throttled", "message": "Too many requests.",
                                       "details": {"retry_after_seconds": 3}}}
    assert response["Retry-After"] == "3"


def test_a_framework_401_carries_the_challenge():
    response = dsh_exception_handler(drf.NotAuthenticated(), {})
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="dsh"'
    assert response.data["error"]["code"] == "not_authenticated"


def test_assert_error_reads_the_framework_refusal(dsh, session):
    assert_error(dsh.api.generic("PATCH", f"/dsh/v1/sessions/{session}"), 405, "method_not_allowed")
