"""Delete and reorder: pre-execute approval, revision checks, renumbering, history."""
from __future__ import annotations

import pytest

from galleries.models import GalleryHistory, GalleryItem
from tests.support.errors import assert_denied, assert_error


@pytest.fixture
def filled(gs):
    body = gs.add_confirmed(gs.write_many(4))
    return [item["item"] for item in body["gallery"]["items"]], body["gallery"]["revision"]


def run(gs, tool, arguments):
    return gs.dsh.approve_and_execute(gs.session, tool, {"extension": gs.extension, **arguments})


def test_delete_removes_and_renumbers(gs, filled):
    items, revision = filled
    response = run(gs, "arkme_extension_preview_delete", {"items": [items[1], items[2]], "revision": revision})
    gallery = response.json()["result"]["gallery"]
    assert [i["item"] for i in gallery["items"]] == [items[0], items[3]]
    assert [i["position"] for i in gallery["items"]] == [1, 2]
    assert gallery["revision"] == revision + 1
    assert GalleryHistory.objects.order_by("revision").last().action == "delete"


def test_reorder_applies_the_permutation(gs, filled):
    items, revision = filled
    order = [items[3], items[0], items[2], items[1]]
    gallery = run(gs, "arkme_extension_preview_reorder", {"order": order, "revision": revision}).json()["result"]["gallery"]
    assert [i["item"] for i in gallery["items"]] == order
    assert [i["position"] for i in gallery["items"]] == [1, 2, 3, 4]
    assert gallery["revision"] == revision + 1


def test_an_approval_binds_the_number_not_how_it_was_written(gs, filled):
    """revision 4.0 and revision 4 are one JSON number: asked with one, run with the other."""
    items, revision = filled
    arguments = {"extension": gs.extension, "order": list(reversed(items))}
    decision = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_reorder",
                                  {**arguments, "revision": float(revision)}).json()
    assert decision["decision"] == "ask"
    response = gs.dsh.execute(gs.session, "arkme_extension_preview_reorder", {**arguments, "revision": revision},
                              approval=decision["approval"])
    assert response.status_code == 200 and response.json()["result"]["gallery"]["revision"] == revision + 1


@pytest.mark.parametrize("tool,key", [("arkme_extension_preview_delete", "items"),
                                      ("arkme_extension_preview_reorder", "order")])
def test_stale_revision_is_409(gs, filled, tool, key):
    items, revision = filled
    response = run(gs, tool, {key: items if key == "order" else items[:1], "revision": revision - 1})
    assert_error(response, 409, "revision_conflict")
    assert GalleryItem.objects.count() == 4


def test_delete_needs_approval_bound_to_the_items(gs, filled):
    items, revision = filled
    args = {"extension": gs.extension, "items": [items[0]], "revision": revision}
    decision = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_delete", args).json()
    assert decision["decision"] == "ask"
    assert "alice-ext" in decision["card"]["title"] and "position 1" in decision["card"]["body"]
    other = {**args, "items": [items[1]]}
    denied = gs.dsh.execute(gs.session, "arkme_extension_preview_delete", other, approval=decision["approval"])
    assert_error(denied, 403, "approval_required", details={"reason": "other_arguments"})
    assert GalleryItem.objects.count() == 4


def test_reorder_card_names_the_extension_and_order(gs, filled):
    items, revision = filled
    args = {"extension": gs.extension, "order": list(reversed(items)), "revision": revision}
    card = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_reorder", args).json()["card"]
    assert "alice-ext" in card["title"] and "4, 3, 2, 1" in card["body"]


@pytest.mark.parametrize("order_of", [lambda i: i[:3], lambda i: i + ["img_unknown"], lambda i: i[:3] + ["img_x"]])
def test_reorder_must_name_every_item_once(gs, filled, order_of):
    items, revision = filled
    decision = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_reorder",
                                  {"extension": gs.extension, "order": order_of(items), "revision": revision})
    if decision.json()["decision"] == "deny":
        assert_denied(decision, ("unknown_item", "invalid_order"))
        return
    response = gs.dsh.execute(gs.session, "arkme_extension_preview_reorder",
                              {"extension": gs.extension, "order": order_of(items), "revision": revision},
                              approval=decision.json()["approval"])
    assert_error(response, 400, "invalid_order")


def test_unknown_item_is_denied_at_pre_execute(gs, filled):
    items, revision = filled
    decision = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_delete",
                                  {"extension": gs.extension, "items": [items[0], "img_nope"], "revision": revision})
    assert assert_denied(decision, "unknown_item")["details"]["fields"] == ["items[1]"]


@pytest.mark.parametrize("arguments,field", [
    ({"items": [], "revision": 0}, "items"),
    ({"items": ["a", "a"], "revision": 0}, "items"),
    ({"items": [f"i{n}" for n in range(21)], "revision": 0}, "items"),
    ({"items": ["a"], "revision": -1}, "revision"),
    ({"items": ["a"], "revision": "1"}, "revision"),
    ({"items": ["a"]}, "revision"),
])
def test_delete_argument_rules(gs, arguments, field):
    response = gs.dsh.execute(gs.session, "arkme_extension_preview_delete", {"extension": gs.extension, **arguments})
    assert field in assert_error(response, 400, "invalid_arguments")["details"]["fields"]


def test_another_accounts_gallery_is_404(gs, filled, world):
    items, revision = filled
    decision = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_delete",
                                  {"extension": world.bob_ext.public_id, "items": items[:1], "revision": 0})
    assert_denied(decision, "unknown_extension")


def test_revision_equals_history_length(gs, filled):
    items, revision = filled
    run(gs, "arkme_extension_preview_reorder", {"order": list(reversed(items)), "revision": revision})
    run(gs, "arkme_extension_preview_delete", {"items": items[:2], "revision": revision + 1})
    gallery = gs.gallery()
    assert gallery["revision"] == GalleryHistory.objects.count() == 3
    assert [i["position"] for i in gallery["items"]] == [1, 2]
