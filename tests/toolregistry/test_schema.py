"""The OpenAPI schema documents every endpoint and every tool's arguments."""
from __future__ import annotations

import json
import re

from django.contrib.staticfiles import finders
from rest_framework.test import APIClient

from toolregistry.catalog import CATALOG


def test_schema_has_every_endpoint_and_tool_schema(db):
    response = APIClient().get("/dsh/v1/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.1")
    paths = schema["paths"]
    expected = {
        "/dsh/v1/catalog": {"get"},
        "/dsh/v1/sessions": {"post"},
        "/dsh/v1/sessions/{session}": {"get", "delete"},
        "/dsh/v1/sessions/{session}/phases/attachments": {"put", "delete"},
        "/dsh/v1/sessions/{session}/messages": {"post"},
        "/dsh/v1/sessions/{session}/tools/{name}/pre-execute": {"post"},
        "/dsh/v1/sessions/{session}/tools/{name}/execute": {"post"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths[path]), path
    components = schema["components"]["schemas"]
    for module in CATALOG.modules:
        assert components[f"ToolArguments_{module.METADATA.name}"]["additionalProperties"] is False
    execute = components["ExecuteRequestRequest"]["properties"]["arguments"]
    assert len(execute["oneOf"]) == len(CATALOG.modules)
    assert schema["components"]["securitySchemes"]["dshClientKey"]["scheme"] == "bearer"
    assert "409" in paths["/dsh/v1/sessions/{session}/tools/{name}/execute"]["post"]["responses"]


def test_schema_is_valid_openapi_3_1(db):
    from drf_spectacular.validation import validate_schema

    schema = APIClient().get("/dsh/v1/schema/?format=json").json()
    assert schema["openapi"] == "3.1.0"
    validate_schema(schema)  # raises on an invalid document


def test_schema_documents_the_mcp_endpoint(db):
    schema = APIClient().get("/dsh/v1/schema/?format=json").json()
    mcp = schema["paths"]["/dsh/v1/sessions/{session}/mcp"]["post"]
    assert mcp["operationId"] == "session_mcp" and {"200", "401", "404", "405"} <= set(mcp["responses"])
    assert any("sessions/{s}/mcp" in line for line in schema["info"]["x-contract-additions"])


def test_swagger_ui_and_redoc_are_served_from_here(client, db):
    for path, marker in (("/dsh/v1/docs/", "swagger-ui"), ("/dsh/v1/redoc/", "redoc")):
        response = client.get(path)
        assert response.status_code == 200, path
        page = response.content.decode()
        assert marker in page.lower() and "/dsh/v1/schema/" in page
        # Every script and stylesheet comes from this service, none from a CDN.
        assert not re.findall(r'(?:src|href)="https?://', page), path
        for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', page):
            assert finders.find(asset.removeprefix("/static/")), asset


def test_static_files_are_served_by_the_web_process(settings, tmp_path):
    """WhiteNoise: the admin is styled under gunicorn, with no separate file server."""
    from django.core.management import call_command
    from django.test import Client

    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", "--noinput", verbosity=0)
    response = Client().get("/static/admin/css/base.css")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
    assert b"".join(response.streaming_content)


INTERNAL = re.compile(r"\b(garbage|collector|reference cycles?|CPU|ORM|transactions?|workers?|gevent|µs|"
                      r"PERFORMANCE\.md|_request|vars\(|APIView)\b", re.IGNORECASE)


def test_every_operation_is_described_for_integrators(db):
    """What Swagger UI, Redoc and the generated clients show: what the endpoint does and what its
    errors mean, never how the view is built (a view's docstring is its description unless
    extend_schema gives one)."""
    schema = APIClient().get("/dsh/v1/schema/?format=json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert len(operation.get("description", "")) > 80, (method, path)
            assert operation.get("summary"), (method, path)
    texts = re.findall(r'"(?:description|summary|title)": "((?:[^"\\]|\\.)*)"', json.dumps(schema))
    assert texts and [text for text in texts if INTERNAL.search(text)] == []


def test_each_tool_has_an_execute_operation_of_its_own(db):
    schema = APIClient().get("/dsh/v1/schema/?format=json").json()
    generic = schema["paths"]["/dsh/v1/sessions/{session}/tools/{name}/execute"]["post"]
    for module in CATALOG.modules:
        name = module.METADATA.name
        own = schema["paths"][f"/dsh/v1/sessions/{{session}}/tools/{name}/execute"]["post"]
        assert own["operationId"] == f"tool_execute_{name}"
        assert {p["name"] for p in own["parameters"]} == {p["name"] for p in generic["parameters"]} - {"name"}
        assert set(own["responses"]) == set(generic["responses"])
        body = schema["components"]["schemas"][f"ExecuteRequest_{name}"]
        assert body["properties"]["arguments"] == {"$ref": f"#/components/schemas/ToolArguments_{name}"}


def test_execute_documents_429_throttled_with_retry_after_and_trace_headers(db):
    schema = APIClient().get("/dsh/v1/schema/?format=json").json()
    for path in ("/dsh/v1/sessions/{session}/tools/{name}/execute",
                 "/dsh/v1/sessions/{session}/tools/arkme_group_member_add/execute"):
        operation = schema["paths"][path]["post"]
        throttled = operation["responses"]["429"]
        assert throttled["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorEnvelope")
        assert throttled["headers"]["Retry-After"]["schema"]["type"] == "integer"
        assert "retry_after_seconds" in throttled["description"]
        assert {"traceparent", "tracestate"} <= {p["name"] for p in operation["parameters"] if p["in"] == "header"}
    assert "throttled" in schema["components"]["schemas"]["ErrorCodeEnum"]["enum"]
