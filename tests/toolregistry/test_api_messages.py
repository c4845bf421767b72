"""Messages: JSON and multipart, ordered attachments kept in storage, limits, cleanup."""
from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils import timezone

from arkme.conversations.models import AgentSession, CapturedAttachment, Message
from tests.support.errors import assert_error


def upload(name: str, content: bytes, content_type="image/png"):
    return SimpleUploadedFile(name, content, content_type=content_type)


def post_multipart(dsh, session, data):
    return dsh.api.post(f"/dsh/v1/sessions/{session}/messages", data, format="multipart")


def test_json_message_is_recorded(dsh, session):
    response = dsh.post(f"sessions/{session}/messages", {"id": "m1", "text": "hello"})
    assert response.status_code == 201
    assert response.json() == {"id": "m1", "attachments": 0}
    assert Message.objects.get().text == "hello"


def test_multipart_attachments_keep_their_order_and_hash(dsh, session):
    files = [upload("b.png", b"second-file"), upload("a.png", b"first-file")]
    response = post_multipart(dsh, session, {"id": "m1", "text": "look", "attachments": files})
    assert response.status_code == 201, response.content
    rows = list(CapturedAttachment.objects.order_by("index"))
    assert [r.index for r in rows] == [1, 2]
    assert [r.sha256 for r in rows] == [hashlib.sha256(b"second-file").hexdigest(), hashlib.sha256(b"first-file").hexdigest()]
    blobs = storages["blobs"]
    assert [blobs.open(r.storage_key).read() for r in rows] == [b"second-file", b"first-file"]


def test_repeated_message_id_is_409_and_stores_nothing(dsh, session):
    assert dsh.post(f"sessions/{session}/messages", {"id": "m1", "text": "a"}).status_code == 201
    response = post_multipart(dsh, session, {"id": "m1", "text": "b", "attachments": [upload("x.png", b"x")]})
    assert_error(response, 409, "duplicate_message")
    assert Message.objects.count() == 1 and CapturedAttachment.objects.count() == 0


def test_same_message_id_in_another_session_is_fine(dsh, world, session):
    other = dsh.open_session(world.alice)["session"]
    assert dsh.post(f"sessions/{session}/messages", {"id": "m1"}).status_code == 201
    assert dsh.post(f"sessions/{other}/messages", {"id": "m1"}).status_code == 201


def test_oversized_attachment_is_413_and_nothing_is_kept(dsh, session, settings, _isolated_storage):
    settings.ARKME_ATTACHMENT_MAX_BYTES = 1024
    files = [upload("ok.png", b"x" * 10), upload("big.png", b"x" * 1025)]
    response = post_multipart(dsh, session, {"id": "m1", "text": "", "attachments": files})
    assert_error(response, 413, "attachment_too_large")
    assert Message.objects.count() == 0
    assert not any(p.is_file() for p in _isolated_storage.rglob("*"))


def test_attachment_of_exactly_the_limit_is_accepted(dsh, session, settings):
    settings.ARKME_ATTACHMENT_MAX_BYTES = 1024
    response = post_multipart(dsh, session, {"id": "m1", "attachments": [upload("ok.png", b"x" * 1024)]})
    assert response.status_code == 201


@pytest.mark.parametrize("body,field", [
    ({"text": "no id"}, "id"),
    ({"id": "", "text": "x"}, "id"),
    ({"id": "x" * 129}, "id"),
    ({"id": "m", "other": 1}, "other"),
    ({"id": 5, "text": ["not", "text"]}, "text"),
])
def test_malformed_messages_are_400(dsh, session, body, field):
    response = dsh.post(f"sessions/{session}/messages", body)
    assert field in assert_error(response, 400, "invalid_request")["details"]["fields"]
    assert Message.objects.count() == 0


def test_unknown_file_field_is_400(dsh, session):
    response = post_multipart(dsh, session, {"id": "m1", "photo": upload("x.png", b"x")})
    assert assert_error(response, 400, "invalid_request")["details"]["fields"] == ["photo"]
    assert Message.objects.count() == 0


@pytest.mark.parametrize("data, field", [
    ({"id": "m1", "attachments": "aGVsbG8="}, "attachments"),                  # a file sent as text
    ({"id": "m1", "attachments": ["text", upload("a.png", b"a")]}, "attachments"),
    ({"id": ["m1", "m2"]}, "id"),                                               # which one?
    ({"id": "m1", "text": ["a", "b"]}, "text"),
])
def test_what_multipart_would_drop_or_pick_from_is_400_by_name(dsh, session, data, field):
    response = post_multipart(dsh, session, data)
    assert assert_error(response, 400, "invalid_request")["details"]["fields"] == [field]
    assert not Message.objects.exists() and not CapturedAttachment.objects.exists()


def test_an_empty_attachment_is_named_by_its_index_as_arguments_are(dsh, session):
    """details.fields names an item by name and index, attachments[1], as it names workspace_paths[3]."""
    response = post_multipart(dsh, session, {"id": "m1", "attachments": [upload("a.png", b"a"), upload("b.png", b"")]})
    assert_error(response, 400, "invalid_request", message="Invalid request: attachments[1].",
                 details={"fields": ["attachments[1]"]})
    assert not Message.objects.exists() and not CapturedAttachment.objects.exists()


def test_more_attachments_than_a_message_may_have_is_400_too_many_attachments(dsh, session, settings):
    files = [upload(f"{i}.png", b"x") for i in range(settings.ARKME_MESSAGE_MAX_ATTACHMENTS + 1)]
    response = post_multipart(dsh, session, {"id": "m1", "attachments": files})
    error = assert_error(response, 400, "too_many_attachments", details={"fields": ["attachments"]})
    assert str(settings.ARKME_MESSAGE_MAX_ATTACHMENTS) in error["message"]
    assert not Message.objects.exists() and not CapturedAttachment.objects.exists()
    files = [upload(f"{i}.png", b"x") for i in range(settings.ARKME_MESSAGE_MAX_ATTACHMENTS)]
    assert post_multipart(dsh, session, {"id": "m1", "attachments": files}).status_code == 201


def test_storage_failure_is_503_and_leaves_nothing(dsh, session, monkeypatch):
    from arkme.conversations import messages
    from arkme.kernel.storage import LocalObjectStore

    calls = {"n": 0}
    real_put = LocalObjectStore._put

    def flaky_put(self, key, data):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return real_put(self, key, data)

    monkeypatch.setattr(LocalObjectStore, "_put", flaky_put)
    deleted = []
    monkeypatch.setattr(messages, "delete_attachments", lambda keys: deleted.extend(keys))
    files = [upload("a.png", b"a"), upload("b.png", b"b")]
    response = post_multipart(dsh, session, {"id": "m1", "attachments": files})
    assert_error(response, 503, "storage_unavailable")
    assert Message.objects.count() == 0
    assert len(deleted) == 1  # the first file, stored before the failure, is removed


def test_closing_the_session_removes_its_attachments(dsh, session, _isolated_storage, django_capture_on_commit_callbacks):
    post_multipart(dsh, session, {"id": "m1", "attachments": [upload("a.png", b"a")]})
    key = CapturedAttachment.objects.get().storage_key
    assert storages["blobs"].exists(key)
    with django_capture_on_commit_callbacks(execute=True):
        assert dsh.delete(f"sessions/{session}").status_code == 204
    assert not storages["blobs"].exists(key)
    assert CapturedAttachment.objects.count() == 0


def test_purge_removes_attachments_of_expired_sessions(dsh, session, settings, django_capture_on_commit_callbacks):
    post_multipart(dsh, session, {"id": "m1", "attachments": [upload("a.png", b"a")]})
    key = CapturedAttachment.objects.get().storage_key
    AgentSession.objects.update(last_seen_at=timezone.now() - timedelta(seconds=settings.ARKME_SESSION_IDLE_SECONDS + 1))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("arkme_sessions", "purge")
    assert not storages["blobs"].exists(key)
    assert AgentSession.objects.get().closed_at is not None


def test_attachments_are_uploaded_before_the_transaction_that_records_the_message(dsh, session, monkeypatch):
    from django.db import connection

    from arkme.kernel.storage import LocalObjectStore

    in_transaction = []
    real_put = LocalObjectStore._put

    def watching_put(self, key, data):
        # pytest-django wraps each test in one atomic block; the service must add none around uploads.
        in_transaction.append(len(connection.atomic_blocks))
        return real_put(self, key, data)

    monkeypatch.setattr(LocalObjectStore, "_put", watching_put)
    baseline = len(connection.atomic_blocks)
    files = [upload("a.png", b"a"), upload("b.png", b"b")]
    assert post_multipart(dsh, session, {"id": "m1", "attachments": files}).status_code == 201
    assert in_transaction == [baseline, baseline]


def test_a_duplicate_message_id_removes_what_it_uploaded(dsh, session, _isolated_storage):
    post_multipart(dsh, session, {"id": "m1", "attachments": [upload("a.png", b"a")]})
    response = post_multipart(dsh, session, {"id": "m1", "attachments": [upload("b.png", b"b")]})
    assert_error(response, 409, "duplicate_message")
    assert len([p for p in (_isolated_storage / "captured").rglob("*") if p.is_file()]) == 1
