"""The documentation lives here and matches the code it describes."""
from __future__ import annotations

import re
from pathlib import Path

from arkme.kernel.errors import ErrorCode
from toolregistry.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[1]


def test_readme_and_docs_point_only_inside_the_repository():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        assert "../" not in text, path.name
        for target in re.findall(r"\]\((?!https?://|#)([^)]+)\)", text):
            assert (path.parent / target).exists(), f"{path.name} links to a missing {target}"


def test_the_api_document_names_every_tool_with_its_id_and_metadata():
    api = (ROOT / "docs" / "API.md").read_text()
    for module in CATALOG.modules:
        meta = module.METADATA
        row = next(line for line in api.splitlines() if line.startswith(f"| `{meta.name}` |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[:6] == [f"`{meta.name}`", f"`{meta.id}`", str(meta.kind), str(meta.phase), str(meta.effect),
                             str(meta.approval)]
        assert [p.strip() for p in cells[6].split(",")] == list(meta.profiles)


def test_the_error_codes_the_api_document_names_exist():
    api = (ROOT / "docs" / "API.md").read_text()
    codes = {str(code) for code in ErrorCode}
    named = set(re.findall(r"`(?:\d{3} )([a-z_]+)`", api))
    assert named and named <= codes, named - codes
