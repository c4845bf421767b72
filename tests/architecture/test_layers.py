"""Every product module is in a layer of the import contract.

import-linter checks the imports between the layers it is told of; a module in none of them is
checked by nothing, and may import upwards unseen. This reads ``.importlinter`` itself and
fails for any module outside every layer.
"""
from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Top-level packages that are not the product.
NOT_PRODUCT = {"tests", "bench"}


def contract() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    return parser


def layer_modules() -> list[str]:
    """The modules the layers contract names, each line split on its independent (``|``) and
    non-independent (``:``) siblings."""
    lines = contract()["importlinter:contract:layers"]["layers"].strip().splitlines()
    return [name.strip() for line in lines for name in re.split(r"[|:]", line) if name.strip()]


def product_packages() -> set[str]:
    return {path.parent.name for path in ROOT.glob("*/__init__.py")} - NOT_PRODUCT


def product_modules() -> dict[str, Path]:
    found = {}
    for package in product_packages():
        for path in (ROOT / package).rglob("*.py"):
            if {"migrations", "tests"} & set(path.relative_to(ROOT).parts):
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(f"{layer}.")


def _imports_nothing(path: Path) -> bool:
    tree = ast.parse(path.read_text(), str(path))
    return not any(isinstance(node, ast.Import | ast.ImportFrom) for node in ast.walk(tree))


def outside_every_layer(modules: dict[str, Path], layers: list[str]) -> list[str]:
    """Modules under no layer. A package that only holds layers (``arkme`` holds the kernel,
    accounts and conversations) counts as in them while it imports nothing: importing any of
    its layers runs it."""
    outside = []
    for module, path in sorted(modules.items()):
        if any(_within(module, layer) for layer in layers):
            continue
        if any(_within(layer, module) for layer in layers) and _imports_nothing(path):
            continue
        outside.append(module)
    return outside


def test_the_contract_analyses_every_product_package():
    roots = set(contract()["importlinter"]["root_packages"].split())
    assert roots == product_packages()


def test_every_product_module_is_in_a_layer():
    layers = layer_modules()
    assert "config" in layers and "arkme.kernel" in layers
    assert outside_every_layer(product_modules(), layers) == []


def test_a_module_beside_the_layers_is_found():
    modules = {"arkme": ROOT / "arkme" / "__init__.py", "arkme.kernel.ids": ROOT / "arkme" / "kernel" / "ids.py",
               "arkme.settings": ROOT / "arkme" / "kernel" / "ids.py"}
    assert outside_every_layer(modules, ["arkme.kernel"]) == ["arkme.settings"]


def test_a_package_above_its_layers_that_imports_is_found():
    # config/__init__.py imports the Celery app: were config's children layers, config would not count.
    modules = {"config": ROOT / "config" / "__init__.py"}
    assert outside_every_layer(modules, ["config.settings"]) == ["config"]
