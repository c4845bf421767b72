"""Each catalog rule, made to fail on purpose; and the shipped catalog passes them all."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.support.fakes import Guidance, base_modules, catalog_of, fake_module, writer
from toolregistry import checks
from toolregistry.catalog import CATALOG
from toolregistry.catalog_checks import validate_catalog
from toolregistry.metadata import Approval, Effect, Kind, Phase


def problem_ids(modules, guidance=()):
    return {p.id for p in validate_catalog(catalog_of(modules, guidance))}


def test_shipped_catalog_is_valid():
    assert validate_catalog(CATALOG) == []
    assert checks.check_catalog() == []


def test_fake_base_catalog_is_valid():
    assert problem_ids(base_modules()) == set()


def test_duplicate_ids_fail():
    modules = base_modules() + [fake_module("arkme_other", tool_id="arkme.lookup@1")]
    assert "toolregistry.E001" in problem_ids(modules)


def test_duplicate_names_fail():
    modules = base_modules() + [fake_module("arkme_lookup", tool_id="arkme.lookup2@1")]
    assert "toolregistry.E002" in problem_ids(modules)


@pytest.mark.parametrize("bad_id", ["lookup@1", "arkme.lookup", "arkme.Lookup@1", "arkme.a.b.c@1",
                                    "arkme.lookup@0", "arkme..x@1", "other.lookup@1"])
def test_ill_formed_ids_fail(bad_id):
    assert "toolregistry.E003" in problem_ids(base_modules() + [fake_module("arkme_x", tool_id=bad_id)])


@pytest.mark.parametrize("bad_name", ["Arkme_x", "1tool", "tool-name", "a" * 65, ""])
def test_ill_formed_names_fail(bad_name):
    assert "toolregistry.E004" in problem_ids(base_modules() + [fake_module(bad_name, tool_id="arkme.x@1")])


@pytest.mark.parametrize("description", ["", "   ", "x" * 1025])
def test_description_empty_or_too_long_fails(description):
    assert "toolregistry.E005" in problem_ids(base_modules() + [fake_module("arkme_x", description=description)])


def test_description_of_1024_characters_passes():
    assert problem_ids(base_modules() + [fake_module("arkme_x", description="x" * 1024)]) == set()


def test_more_than_128_tools_in_a_profile_fails():
    many = [fake_module(f"arkme_t{i}") for i in range(127)]
    assert "toolregistry.E006" not in problem_ids(base_modules()[:1] + many)  # exactly 128
    assert "toolregistry.E006" in problem_ids(base_modules()[:2] + many)  # 129


@pytest.mark.parametrize("kind,profiles", [
    (Kind.BUSINESS, ("business", "atomic")),
    (Kind.ATOMIC, ("atomic", "business")),
    (Kind.BUSINESS, ("business", "disabled")),
    (Kind.BUSINESS, ("business", "nonexistent")),
])
def test_kind_in_a_profile_that_may_not_show_it_fails(kind, profiles):
    assert "toolregistry.E007" in problem_ids(base_modules() + [fake_module("arkme_x", kind=kind, profiles=profiles)])


def test_system_tool_missing_from_a_profile_fails():
    modules = base_modules() + [fake_module("arkme_sys", kind=Kind.SYSTEM, profiles=("business", "hybrid"))]
    assert "toolregistry.E008" in problem_ids(modules)


def test_write_without_explicit_grant_fails():
    assert "toolregistry.E009" in problem_ids(base_modules() + [writer("arkme_w", grant=None)])
    assert "toolregistry.E009" in problem_ids(base_modules() + [writer("arkme_w", grant="")])
    assert problem_ids(base_modules() + [writer("arkme_w")]) == set()


@pytest.mark.parametrize("kw", [{"grant": "explicit-user-write"}, {"approval": Approval.PRE_EXECUTE},
                                {"approval": Approval.CONVERSATION}])
def test_read_with_grant_or_approval_fails(kw):
    assert "toolregistry.E010" in problem_ids(base_modules() + [fake_module("arkme_r", effect=Effect.READ, **kw)])


def test_guidance_naming_a_tool_outside_the_profile_fails():
    guidance = [Guidance("g", ("arkme_lookup",), "Use arkme_lookup, then arkme_atom.")]
    assert "toolregistry.E011" in problem_ids(base_modules(), guidance)


def test_guidance_naming_an_unmounted_attachments_tool_fails():
    # Selected with core only (it requires arkme_lookup), but names an attachments tool.
    guidance = [Guidance("g", ("arkme_lookup",), "Use arkme_lookup, then arkme_attach.")]
    problems = validate_catalog(catalog_of(base_modules(), guidance))
    assert any(p.id == "toolregistry.E011" and "phases core" in p.message for p in problems)


def test_guidance_within_its_selection_passes():
    guidance = [Guidance("g", ("arkme_lookup", "arkme_attach"), "Use arkme_lookup, then arkme_attach.")]
    assert problem_ids(base_modules(), guidance) == set()


def test_definition_named_differently_from_its_metadata_fails():
    assert "toolregistry.E012" in problem_ids(base_modules() + [fake_module("arkme_x", definition_name="arkme_y")])


def test_schema_that_accepts_unknown_arguments_fails():
    loose = {"type": "object", "properties": {}}
    assert "toolregistry.E013" in problem_ids(base_modules() + [fake_module("arkme_x", schema=loose)])
    invalid = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "nonsense"}}}
    assert "toolregistry.E013" in problem_ids(base_modules() + [fake_module("arkme_x", schema=invalid)])


def test_pre_execute_tool_without_a_card_fails():
    assert "toolregistry.E014" in problem_ids(base_modules() + [writer("arkme_w", card=False)])


def test_system_check_reports_a_bad_catalog(monkeypatch):
    bad = catalog_of(base_modules() + [fake_module("arkme_lookup", tool_id="arkme.dup@1")])
    monkeypatch.setattr(checks, "CATALOG", bad)
    errors = checks.check_catalog()
    assert [e.id for e in errors] == ["toolregistry.E002"]
    assert errors[0].is_serious()


def test_catalog_check_command_fails_on_a_bad_catalog(monkeypatch, capsys):
    from toolregistry.management.commands import arkme_catalog
    monkeypatch.setattr(arkme_catalog, "CATALOG", catalog_of(base_modules() + [writer("arkme_w", grant=None)]))
    with pytest.raises(CommandError, match="1 problem"):
        call_command("arkme_catalog", "check")
    assert "toolregistry.E009" in capsys.readouterr().err


def test_phase_of_every_shipped_module_is_known():
    assert all(module.METADATA.phase in set(Phase) for module in CATALOG.modules)


@pytest.mark.parametrize("output", [{}, {"type": "array"}, {"type": "object", "properties": {"x": {"type": 7}}}])
def test_an_output_schema_must_be_valid_and_describe_an_object(output):
    assert "toolregistry.E015" in problem_ids(base_modules() + [fake_module("arkme_x", output=output)])


@pytest.mark.parametrize("title", ["", "x" * 61])
def test_a_tool_needs_a_short_title(title):
    assert "toolregistry.E016" in problem_ids(base_modules() + [fake_module("arkme_x", title=title)])


@pytest.mark.parametrize("hints", [{"destructive": True}, {"idempotent": False}])
def test_a_read_is_neither_destructive_nor_unrepeatable(hints):
    assert "toolregistry.E017" in problem_ids(base_modules() + [fake_module("arkme_x", **hints)])
