"""The bad-input catalogue: each case gets a clear 4xx and writes nothing."""
from __future__ import annotations

import os

import pytest

from galleries.models import Blob, GalleryItem, PendingOperation
from tests.support import images
from tests.support.errors import assert_error, assert_tool_error
from tests.support.images import BAD_SVG
from tests.support.mcp import Mcp, accept, both_ways, refused_alike

FILES = {
    "text file": b"just some text",
    "pdf": b"%PDF-1.4\n%...",
    "gzip": b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
    "truncated png": images.png()[:200],
    "tiny png": images.png((100, 100)),
    "too wide png": images.png((5000, 400)),
    "animated gif": images.animated_gif(),
    "over 5 MiB": images.png() + b"\x00" * (5 * 1024 * 1024),
    "empty": b"",
    **{f"svg: {name}": data for name, data in BAD_SVG.items()},
}


def assert_nothing_written(media):
    assert PendingOperation.objects.count() == 0
    assert Blob.objects.count() == 0 and GalleryItem.objects.count() == 0
    assert not [p for p in media.rglob("*") if p.is_file() and "captured" not in p.parts]


@pytest.mark.parametrize("name", sorted(FILES))
def test_bad_workspace_file(figures, gs, _isolated_storage, name):
    path = gs.write(f"bad-{abs(hash(name))}.png", FILES[name])
    arguments = {"action": "prepare", "extension": gs.extension, "source": "workspace",
                 "workspace_paths": [gs.write_many(1)[0], path]}
    error = refused_alike(both_ways(gs.dsh, gs.session, "arkme_extension_preview_add", arguments))
    assert error["details"]["fields"] == ["workspace_paths[1]"]
    figures.add("bad_inputs_tried", 2)
    assert_nothing_written(_isolated_storage)


@pytest.mark.parametrize("arguments,code", [
    ({"source": "workspace", "workspace_paths": []}, "invalid_arguments"),
    ({"source": "workspace", "workspace_paths": ["a.png", "a.png"]}, "invalid_arguments"),
    ({"source": "workspace", "workspace_paths": [f"{i}.png" for i in range(21)]}, "invalid_arguments"),
    ({"source": "workspace", "workspace_paths": ["/etc/passwd"]}, "invalid_workspace_path"),
    ({"source": "workspace", "workspace_paths": ["../x.png"]}, "invalid_workspace_path"),
    ({"source": "workspace", "workspace_paths": ["a\\b.png"]}, "invalid_workspace_path"),
    ({"source": "workspace", "workspace_paths": [""]}, "invalid_arguments"),
    ({"source": "workspace"}, "invalid_arguments"),
    ({"source": "workspace", "workspace_paths": ["a.png"], "image_ref": "x"}, "invalid_arguments"),
    ({"source": "image_ref"}, "invalid_arguments"),
    ({"source": "image_ref", "image_ref": "not-a-ref"}, "invalid_image_ref"),
    ({"source": "attachments", "attachment_indices": [0]}, "invalid_arguments"),
    ({"source": "attachments", "attachment_indices": [1, 1]}, "invalid_arguments"),
    ({"source": "attachments", "attachment_indices": []}, "invalid_arguments"),
    ({"source": "attachments", "attachment_indices": ["1"]}, "invalid_arguments"),
    ({"source": "attachments", "attachment_indices": [2]}, "invalid_attachment_index"),
    ({"source": "ftp"}, "invalid_arguments"),
    ({}, "invalid_arguments"),
    ({"source": "workspace", "workspace_paths": ["a.png"], "operation": "op_x"}, "invalid_arguments"),
    ({"source": "workspace", "workspace_paths": "a.png"}, "invalid_arguments"),
])
def test_bad_prepare_arguments(figures, gs, _isolated_storage, arguments, code):
    gs.say("", files=[("a.png", images.png())])
    refused_alike(both_ways(gs.dsh, gs.session, "arkme_extension_preview_add",
                            {"action": "prepare", "extension": gs.extension, **arguments}), code)
    figures.add("bad_inputs_tried", 2)
    assert_nothing_written(_isolated_storage)


@pytest.mark.parametrize("arguments,status,code", [
    ({"action": "confirm"}, 400, "invalid_arguments"),
    ({"action": "confirm", "operation": "op_nope"}, 404, "unknown_operation"),
    ({"action": "cancel", "operation": "op_nope"}, 404, "unknown_operation"),
    ({"action": "confirm", "operation": "op_x", "source": "workspace"}, 400, "invalid_arguments"),
    ({"action": "delete", "operation": "op_x"}, 400, "invalid_arguments"),
])
def test_bad_confirm_arguments(figures, gs, _isolated_storage, arguments, status, code):
    response = gs.add(**arguments)
    over_mcp = Mcp(gs.dsh, gs.session).call_answering(
        "arkme_extension_preview_add", {"extension": gs.extension, **arguments}, accept(reply="确认"))
    assert assert_tool_error(over_mcp, code) == assert_error(response, status, code)
    figures.add("bad_inputs_tried", 2)
    assert_nothing_written(_isolated_storage)


def test_symlink_escape_changes_nothing(figures, gs, _isolated_storage, tmp_path):
    (tmp_path / "secret.png").write_bytes(images.png())
    os.symlink(tmp_path / "secret.png", gs.workspace / "escape.png")
    outcomes = both_ways(gs.dsh, gs.session, "arkme_extension_preview_add", {
        "action": "prepare", "extension": gs.extension, "source": "workspace", "workspace_paths": ["escape.png"]})
    error = refused_alike(outcomes, "workspace_file_refused")
    assert "escape" not in str(error)
    figures.add("bad_inputs_tried", 2)
    assert_nothing_written(_isolated_storage)
