"""Shared fixtures: an isolated storage root, DSH clients, a small world, staff, figures, S3.

Helpers live in ``tests.support``; the gallery and group fixtures are plugins from there, so
no test module imports another.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client

from arkme.accounts.models import Account
from galleries.services.extensions import extension_create
from groups.models import Group, JoinPolicy, Role
from groups.services import membership_ensure, private_chat_ensure
from tests.support import figures as figure_store
from tests.support.dsh import LEDGER, Dsh, make_dsh
from tests.support.leaks import find_leaks
from tests.support.results import result_problems
from tests.support.services import require_service

pytest_plugins = ["tests.support.galleries", "tests.support.groups", "tests.support.stack"]


@pytest.fixture
def postgres(db):
    """Races need real row locks and several connections: PostgreSQL, via DATABASE_URL."""
    from django.db import connection

    require_service("PostgreSQL", connection.vendor == "postgresql",
                    "set DATABASE_URL=postgres://... (make test runs on SQLite by default)")


@pytest.fixture(autouse=True)
def _isolated_storage(settings, tmp_path):
    media = tmp_path / "media"
    workspaces = tmp_path / "workspaces"
    media.mkdir()
    workspaces.mkdir()
    if settings.ARKME_STORAGE == "filesystem":
        blob = {"BACKEND": "django.core.files.storage.FileSystemStorage",
                "OPTIONS": {"location": str(media), "base_url": None}}
        settings.STORAGES = {**django_settings.STORAGES, "default": blob, "blobs": blob}
    settings.ARKME_MEDIA_ROOT = media
    settings.ARKME_WORKSPACE_ROOT = workspaces
    return media


@pytest.fixture(autouse=True)
def leak_guard():
    """Fails a test if any DSH response it saw carries a key, fingerprint, URL, secret…"""
    LEDGER.bodies.clear()
    LEDGER.secrets.clear()
    LEDGER.account_ids.clear()
    yield LEDGER
    leaks = [f"{path}: {leak}" for path, body in LEDGER.bodies
             for leak in find_leaks(body, LEDGER.secrets, LEDGER.account_ids)]
    mismatches = [f"{path}: {problem}" for path, body in LEDGER.bodies for problem in result_problems(path, body)]
    assert not mismatches, "results outside their tool's output schema:\n" + "\n".join(mismatches[:20])
    LEDGER.scanned += len(LEDGER.bodies)
    LEDGER.found += len(leaks)
    assert not leaks, "responses leaked:\n" + "\n".join(leaks[:20])


class FigureRecorder:
    """Reliability figures a test measured; written to var/reliability.json at the end."""

    def add(self, name: str, amount: float = 1) -> None:
        figure_store.add(name, amount)

    def record(self, name: str, value: Any) -> None:
        figure_store.FIGURES[name] = value


@pytest.fixture(autouse=True)
def _mcp_tools_run_as_served(monkeypatch):
    """django-mcpz runs a tool in a savepoint when a transaction is open. A served request has
    none (no ATOMIC_REQUESTS), so there it is a no-op; a test's own transaction would turn it
    into a savepoint that hides a refusal's writes and trips the services' durable blocks."""
    import contextlib

    import django_mcpz.server

    monkeypatch.setattr(django_mcpz.server, "_savepoints", contextlib.nullcontext)


@pytest.fixture
def figures() -> FigureRecorder:
    return FigureRecorder()


@pytest.fixture
def dsh(db) -> Dsh:
    return make_dsh()


@pytest.fixture
def other_dsh(db) -> Dsh:
    return make_dsh("other-dsh")


@dataclass
class World:
    alice: Account
    bob: Account
    carol: Account
    dave: Account
    alice_ext: object
    bob_ext: object
    open_group: Group
    approval_group: Group


@pytest.fixture
def world(db) -> World:
    people = {name: Account.objects.create(display_name=name.title()) for name in ("alice", "bob", "carol", "dave")}
    alice, bob = people["alice"], people["bob"]
    open_group = Group.objects.create(name="open-group", join_policy=JoinPolicy.OPEN)
    approval_group = Group.objects.create(name="approval-group", join_policy=JoinPolicy.APPROVAL)
    for group in (open_group, approval_group):
        membership_ensure(group=group, account=alice, role=Role.ADMIN)
    membership_ensure(group=open_group, account=bob)
    for other in ("bob", "carol", "dave"):
        private_chat_ensure(a=alice, b=people[other])
    return World(
        **people,
        alice_ext=extension_create(owner=alice, name="alice-ext"),
        bob_ext=extension_create(owner=bob, name="bob-ext"),
        open_group=open_group, approval_group=approval_group,
    )


@pytest.fixture
def session(dsh, world) -> str:
    """Alice's agent session, opened by the ``dsh`` client in the default profile."""
    return dsh.open_session(world.alice)["session"]


@pytest.fixture
def refs(dsh, session):
    """Alice's source refs by group name, as arkme_context hands them out."""
    result = dsh.execute(session, "arkme_context", {}).json()["result"]
    return {group["name"]: group["source_ref"] for group in result["groups"]}


@pytest.fixture
def staff(db) -> Client:
    """A signed-in superuser's browser."""
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("staff", "staff@example.com", "pw-123456"))
    return client


@pytest.fixture(scope="session")
def moto_endpoint():
    """moto's standalone S3 server over HTTP on 127.0.0.1, for the whole run."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    try:
        from moto.server import ThreadedMotoServer
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
    except Exception as exc:  # pragma: no cover - only when moto cannot start
        require_service("S3 (moto)", False, str(exc))
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_blob_settings(endpoint: str, bucket: str) -> dict:
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {"bucket_name": bucket, "endpoint_url": endpoint, "region_name": "us-east-1",
                    "default_acl": None, "querystring_auth": True, "file_overwrite": True},
    }


@pytest.fixture
def s3(settings, moto_endpoint, request):
    """Blob storage on S3 for one test, in a bucket of its own."""
    import boto3

    bucket = f"arkme-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    blob = s3_blob_settings(moto_endpoint, bucket)
    settings.ARKME_STORAGE = "s3"
    settings.STORAGES = {**settings.STORAGES, "default": blob, "blobs": blob}
    return bucket


def pytest_sessionfinish(session, exitstatus):
    """The reliability figures, written to var/reliability.json (`make test` prints them last)."""
    figure_store.add("leak_responses_scanned", LEDGER.scanned)
    figure_store.add("leaks_found", LEDGER.found)
    figure_store.write(figure_store.FIGURES_FILE)


@pytest.fixture(autouse=True)
def stored_pngs_decode_strictly(_isolated_storage, figures):
    """Every PNG a test stored as a blob decodes with a second, strict decoder (pypng), not
    only with Pillow, which stops at the last row."""
    yield
    import png as pypng

    for path in (_isolated_storage / "blobs").rglob("*"):
        if path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n":
            width, height, rows, _ = pypng.Reader(bytes=path.read_bytes()).read()
            assert sum(1 for _ in rows) == height, path.name
            figures.add("stored_pngs_decoded_strictly")
