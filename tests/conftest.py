"""Shared fixtures: an isolated storage root, DSH clients, the API client and a small world."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from arkme.accounts.models import Account
from arkme.conversations.clients import dsh_client_create
from galleries.services.extensions import extension_create
from groups.models import Group, JoinPolicy, Role
from groups.services import membership_ensure, private_chat_ensure

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_service(name: str, available: bool, reason: str) -> None:
    """Outside CI a missing service skips with a reason; inside CI it fails the run."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{name} is required in CI: {reason}")
    pytest.skip(f"{name} unavailable: {reason}")


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


class LeakLedger:
    """Every DSH response a test sees, and the values that test declared secret."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, object]] = []
        self.secrets: set[str] = set()
        self.account_ids: set[str] = set()
        self.scanned = 0
        self.found = 0

    def record(self, path: str, response) -> None:
        if response.get("Content-Type", "").startswith("application/json") and response.content:
            self.bodies.append((path, response.json()))
            # Raw account ids, to look for inside decoded refs.
            self.account_ids.update(str(pk) for pk in Account.objects.values_list("pk", flat=True))


LEDGER = LeakLedger()


@pytest.fixture(autouse=True)
def leak_guard():
    """Fails a test if any DSH response it saw carries a key, fingerprint, URL, secret…"""
    from .leaks import find_leaks

    LEDGER.bodies.clear()
    LEDGER.secrets.clear()
    LEDGER.account_ids.clear()
    yield LEDGER
    leaks = [f"{path}: {leak}" for path, body in LEDGER.bodies
             for leak in find_leaks(body, LEDGER.secrets, LEDGER.account_ids)]
    LEDGER.scanned += len(LEDGER.bodies)
    LEDGER.found += len(leaks)
    assert not leaks, "responses leaked:\n" + "\n".join(leaks[:20])


class RecordingClient(APIClient):
    def generic(self, method, path, *args, **kwargs):
        response = super().generic(method, path, *args, **kwargs)
        if path.startswith("/dsh/"):
            LEDGER.record(path, response)
        return response


@dataclass
class Dsh:
    api: APIClient
    key: str
    client: object

    def url(self, path: str) -> str:
        return f"/dsh/v1/{path}"

    def get(self, path, **kw):
        return self.api.get(self.url(path), **kw)

    def post(self, path, data=None, **kw):
        kw.setdefault("format", "json")
        return self.api.post(self.url(path), data, **kw)

    def put(self, path, **kw):
        return self.api.put(self.url(path), **kw)

    def delete(self, path, **kw):
        return self.api.delete(self.url(path), **kw)

    def open_session(self, account: Account, **body) -> dict:
        response = self.post("sessions", {"account": account.public_id, **body})
        assert response.status_code == 201, response.content
        return response.json()

    def execute(self, session: str, tool: str, arguments: dict, **kw):
        body = {"arguments": arguments}
        if "approval" in kw:
            body["approval"] = kw.pop("approval")
        return self.post(f"sessions/{session}/tools/{tool}/execute", body, **kw)

    def pre_execute(self, session: str, tool: str, arguments: dict):
        return self.post(f"sessions/{session}/tools/{tool}/pre-execute", {"arguments": arguments})

    def approve_and_execute(self, session: str, tool: str, arguments: dict, **kw):
        decision = self.pre_execute(session, tool, arguments).json()
        assert decision["decision"] == "ask", decision
        return self.execute(session, tool, arguments, approval=decision["approval"], **kw)


def make_dsh(name: str = "dsh", profiles=()) -> Dsh:
    client, key = dsh_client_create(name=name, profiles=profiles)
    api = RecordingClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return Dsh(api=api, key=key, client=client)


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
def alice_session(dsh, world):
    return dsh.open_session(world.alice)["session"]


@pytest.fixture
def refs(dsh, alice_session):
    """Alice's source refs by group name, as arkme_context hands them out."""
    result = dsh.execute(alice_session, "arkme_context", {}).json()["result"]
    return {group["name"]: group["source_ref"] for group in result["groups"]}


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
    import uuid

    import boto3

    bucket = f"arkme-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    blob = s3_blob_settings(moto_endpoint, bucket)
    settings.ARKME_STORAGE = "s3"
    settings.STORAGES = {**settings.STORAGES, "default": blob, "blobs": blob}
    return bucket


def pytest_sessionfinish(session, exitstatus):
    """The reliability figures, written to var/reliability.json (`make test` prints them last)."""
    from pathlib import Path

    from . import figures
    from .test_cross_account import MATRIX_RESULTS

    figures.add("leak_responses_scanned", LEDGER.scanned)
    figures.add("leaks_found", LEDGER.found)
    if MATRIX_RESULTS:
        refused = sum(1 for _, ok in MATRIX_RESULTS if ok)
        figures.FIGURES["cross_account_cases"] = len(MATRIX_RESULTS)
        figures.FIGURES["cross_account_refused_percent"] = round(100 * refused / len(MATRIX_RESULTS), 1)
    figures.write(Path(__file__).resolve().parent.parent / "var" / "reliability.json")
