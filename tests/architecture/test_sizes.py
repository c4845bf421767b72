"""Small modules with names that explain themselves: no product function over 60 lines (its
decorators and docstring included), no product module over 400."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "toolregistry", "galleries", "groups", "arkme", "serverlog")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def product_modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                  if "migrations" not in path.parts)


def test_there_are_product_modules():
    assert len(product_modules()) > 100


@pytest.mark.parametrize("path", product_modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_module_and_its_functions_are_small(path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_MODULE_LINES, f"{source.count(chr(10))} lines"
    long = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            length = node.end_lineno - start + 1
            if length > MAX_FUNCTION_LINES:
                long[f"{node.name} (line {node.lineno})"] = length
    assert not long, long
