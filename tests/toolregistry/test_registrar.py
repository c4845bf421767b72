"""The registrar compiles each (profile, phases) once and hands out checked definitions."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.support.fakes import Guidance, base_modules, catalog_of, fake_module, writer
from toolregistry.metadata import Approval, Kind, Phase
from toolregistry.registrar import Registrar, registrar

CORE = {Phase.CORE}
ALL = {Phase.CORE, Phase.ATTACHMENTS}


def names(toolset):
    return [tool.metadata.name for tool in toolset.tools]


def test_profiles_select_kinds():
    r = Registrar(catalog_of(base_modules()))
    assert names(r.toolset("business", ALL)) == ["arkme_context", "arkme_lookup", "arkme_attach"]
    assert names(r.toolset("atomic", ALL)) == ["arkme_context", "arkme_atom"]
    assert names(r.toolset("hybrid", ALL)) == ["arkme_context", "arkme_lookup", "arkme_attach", "arkme_atom"]
    assert names(r.toolset("disabled", ALL)) == []


def test_attachments_tools_only_while_mounted():
    r = Registrar(catalog_of(base_modules()))
    assert "arkme_attach" not in names(r.toolset("business", CORE))
    assert "arkme_attach" in names(r.toolset("business", ALL))


def test_guidance_follows_the_visible_tools():
    guidance = [
        Guidance("a", ("arkme_context",), "Call arkme_context first."),
        Guidance("b", ("arkme_lookup", "arkme_attach"), "arkme_lookup before arkme_attach."),
    ]
    r = Registrar(catalog_of(base_modules(), guidance))
    assert r.toolset("business", CORE).prompt == "Call arkme_context first."
    assert r.toolset("business", ALL).prompt == "Call arkme_context first.\n\narkme_lookup before arkme_attach."
    assert r.toolset("disabled", ALL).prompt == ""


def test_compiled_once_and_cached():
    calls = []
    module = fake_module("arkme_context", kind=Kind.SYSTEM)
    original = module.definition

    def counting():
        calls.append(1)
        return original()

    module.definition = counting
    r = Registrar(catalog_of([module]))
    first = r.toolset("business", CORE)
    assert r.toolset("business", [Phase.CORE]) is first
    r.toolset("hybrid", CORE)
    assert len(calls) == 1  # each module is materialised once, whatever the profiles


def test_revision_changes_with_tools_or_prompt():
    r = Registrar(catalog_of(base_modules()))
    revisions = {r.toolset(p, phases).revision for p in ("business", "atomic", "hybrid") for phases in (CORE, ALL)}
    assert len(revisions) == 6
    # The revision is the session view's ETag, so it follows the phases too.
    assert r.toolset("atomic", CORE).revision != r.toolset("atomic", ALL).revision
    assert r.toolset("business", CORE).revision == Registrar(catalog_of(base_modules())).toolset("business", CORE).revision


def test_name_mismatch_is_a_configuration_error():
    r = Registrar(catalog_of([fake_module("arkme_context", kind=Kind.SYSTEM, definition_name="arkme_ctx")]))
    with pytest.raises(ImproperlyConfigured, match="arkme_ctx"):
        r.toolset("business", CORE)


def test_unknown_profile_is_a_configuration_error():
    with pytest.raises(ImproperlyConfigured):
        Registrar(catalog_of(base_modules())).toolset("nope", CORE)


def test_annotations_state_all_four_hints_from_metadata():
    r = Registrar(catalog_of(base_modules() + [
        writer("arkme_w"), writer("arkme_d", destructive=True, idempotent=True),
        writer("arkme_o", approval=Approval.CONVERSATION, open_world=True),
    ]))
    tools = {t.metadata.name: t.public["metadata"]["annotations"] for t in r.toolset("business", CORE).tools}
    assert tools["arkme_lookup"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    assert tools["arkme_w"] == {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
    assert tools["arkme_d"] == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
    assert tools["arkme_o"] == {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}


def test_shipped_hints_are_true_to_the_tools():
    hints = {t.metadata.name: t.metadata.annotations() for t in registrar.toolset("hybrid", ALL).tools}
    destructive = {name for name, h in hints.items() if h["destructiveHint"]}
    assert destructive == {"arkme_extension_preview_delete", "arkme_extension_preview_reorder", "arkme_id_change"}
    # Adding people sends them invitations: the only tool that reaches beyond the user.
    assert {name for name, h in hints.items() if h["openWorldHint"]} == {"arkme_group_member_add"}
    assert {name for name, h in hints.items() if h["readOnlyHint"]} == {"arkme_context", "arkme_group_member_candidates"}
    assert not hints["arkme_extension_preview_add"]["idempotentHint"]
    assert not hints["arkme_id_change"]["idempotentHint"]


def test_shipped_definitions_have_the_contract_shape():
    toolset = registrar.toolset("business", ALL)
    for definition in toolset.definitions():
        assert set(definition) == {"name", "description", "input_schema", "metadata"}
        assert set(definition["metadata"]) == {"id", "kind", "phase", "effect", "grant", "approval", "annotations"}
        assert definition["input_schema"]["additionalProperties"] is False
    context = toolset.get("arkme_context").public
    assert context["metadata"] == {
        "id": "arkme.context@1", "kind": "system", "phase": "core", "effect": "read", "grant": None,
        "approval": "none",
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
    }
    change = toolset.get("arkme_id_change").public["metadata"]
    assert (change["effect"], change["grant"], change["approval"]) == ("write", "explicit-user-write", "pre-execute")


def test_every_shipped_tool_has_a_title():
    for tool in registrar.toolset("hybrid", ALL).tools:
        assert 0 < len(tool.metadata.title) <= 60
