"""Fuzzing the DSH contract: schemathesis generates valid and invalid requests from the served
OpenAPI schema; no case may produce a server error or a response outside the schema."""
from __future__ import annotations

import hashlib

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from config.wsgi import application
from tests.support.dsh import make_dsh
from tests.support.wsgi import requests_keep_the_connection
from toolregistry.catalog import CATALOG

pytestmark = pytest.mark.django_db
EXAMPLES = {"tool_execute": 400, "tool_pre_execute": 300, "session_open": 150, "message_record": 150}
DEFAULT_EXAMPLES = 40
TOOL_NAMES = [module.METADATA.name for module in CATALOG.modules]


def _pick(case, choices):
    digest = hashlib.sha256(repr((case.body, case.path_parameters, case.query)).encode()).digest()
    return choices[digest[0] % len(choices)] if digest[1] % 4 else None  # a quarter stay fully random


def test_no_server_errors_and_responses_match_the_schema(figures, world, settings):
    dsh = make_dsh("fuzzer")
    view = dsh.open_session(world.alice, workspace="fuzz")
    session = view["session"]
    dsh.put(f"sessions/{session}/phases/attachments")
    headers = {"Authorization": f"Bearer {dsh.key}"}
    counted = {"cases": 0, "failures": 0}
    with requests_keep_the_connection():
        fuzz(world, session, headers, counted)
    figures.add("fuzz_cases", counted["cases"])
    figures.add("fuzz_server_errors_or_mismatches", counted["failures"])
    assert counted["cases"] >= 1000


def fuzz(world, session: str, headers: dict, counted: dict) -> None:
    schema = schemathesis.openapi.from_wsgi("/dsh/v1/schema/?format=json", application)
    for result in schema.get_all_operations():
        operation = result.ok()
        name = operation.definition.raw.get("operationId", "")
        examples = EXAMPLES.get(name, DEFAULT_EXAMPLES)

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                             suppress_health_check=list(HealthCheck))
        def run(case):
            if "session" in (case.path_parameters or {}) and name != "session_close":
                case.path_parameters["session"] = _pick(case, [session]) or case.path_parameters["session"]
            if name == "session_open" and isinstance(case.body, dict) and "account" in case.body:
                case.body["account"] = _pick(case, [world.alice.public_id]) or case.body["account"]
            if "name" in (case.path_parameters or {}):
                case.path_parameters["name"] = _pick(case, TOOL_NAMES) or case.path_parameters["name"]
            counted["cases"] += 1
            try:
                case.call_and_validate(headers=headers, checks=[not_a_server_error, response_schema_conformance])
            except Exception:
                counted["failures"] += 1
                raise

        run()
