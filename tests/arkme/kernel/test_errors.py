"""The error-code registry: every raise site names a registered code, and the schema lists them."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arkme.kernel.errors import ArkmeError, ErrorCode, error_from_answer

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("config", "arkme", "galleries", "groups", "toolregistry")
# Calls whose first positional argument is an error code.
CODE_FIRST = {"ImageRejected", "envelope"}


def _is_registry_member(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ErrorCode"


def code_sites() -> list[tuple[str, int, ast.expr]]:
    """Every place first-party code names an error code: ``code=…`` keywords, class-level
    ``code = …`` on an error class, and the code argument of ImageRejected / envelope."""
    sites = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), str(path))
            where = str(path.relative_to(ROOT))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    sites += [(where, node.lineno, k.value) for k in node.keywords if k.arg == "code"]
                    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                    if name in CODE_FIRST and node.args:
                        sites.append((where, node.lineno, node.args[0]))
                elif isinstance(node, ast.ClassDef):
                    for statement in node.body:
                        targets = statement.targets if isinstance(statement, ast.Assign) else (
                            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
                        if any(isinstance(t, ast.Name) and t.id == "code" for t in targets) and statement.value:
                            sites.append((where, statement.lineno, statement.value))
    return sites


def test_the_scan_finds_the_raise_sites():
    sites = code_sites()
    assert len(sites) > 60  # every domain raises; a scan that found few would be looking elsewhere
    assert any(where.endswith("gallery_edit.py") for where, _, _ in sites)


def test_every_code_named_in_the_source_is_a_registry_member():
    # Variables holding a code (error.code, a parameter) pass through; literals and f-strings may not.
    offenders = [f"{where}:{line}" for where, line, value in code_sites()
                 if isinstance(value, (ast.Constant, ast.JoinedStr)) and not _is_registry_member(value)]
    assert offenders == []


def test_an_unregistered_code_cannot_be_raised():
    with pytest.raises(ValueError):
        ArkmeError("x", code="made_up_code")  # type: ignore[arg-type]


def test_a_code_that_crossed_json_is_read_back_into_the_registry():
    error = error_from_answer({"code": "unsafe_svg", "message": "m"}, 422)
    assert error.code is ErrorCode.UNSAFE_SVG and error.http_status == 422
    assert error_from_answer({"code": "nonsense"}, 500).code is ErrorCode.ERROR


def test_the_schema_lists_exactly_the_registry_as_the_code_enum(client):
    schema = client.get("/dsh/v1/schema/?format=json").json()
    components = schema["components"]["schemas"]
    code = components["ErrorBody"]["properties"]["code"]
    enum_name = code["allOf"][0]["$ref"].rsplit("/", 1)[-1]
    assert set(components[enum_name]["enum"]) == {member.value for member in ErrorCode}
