"""The gallery's staff pages: thumbnails streamed to staff only, operations, blobs, history."""
from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from PIL import Image

from galleries.models import Blob, OperationStatus, PendingOperation


def test_extension_page_shows_its_gallery_as_thumbnails(staff, gs, world):
    gs.add_confirmed(gs.write_many(2))
    page = staff.get(f"/admin/galleries/extension/{world.alice_ext.pk}/change/").content.decode()
    blobs = list(Blob.objects.all())
    for blob in blobs:
        assert f"/admin/galleries/blob/{blob.pk}/image/" in page
    assert "blobs/" not in page and "X-Amz" not in page  # no object keys or signed URLs
    response = staff.get(f"/admin/galleries/blob/{blobs[0].pk}/image/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(response.content)).size == (128, 128)  # a rendition, not the original


def test_a_thumbnail_is_made_once_and_then_read_from_storage(staff, gs, monkeypatch, _isolated_storage):
    from galleries.blobs import services

    gs.add_confirmed(gs.write_many(1))
    blob = Blob.objects.get()
    first = staff.get(f"/admin/galleries/blob/{blob.pk}/image/").content
    assert [p.name for p in (_isolated_storage / "thumbs").rglob("*.png")] == [f"{blob.sha256}-128.png"]
    monkeypatch.setattr(services, "make_thumbnail", lambda *a: pytest.fail("made again"))
    assert staff.get(f"/admin/galleries/blob/{blob.pk}/image/").content == first


def test_thumbnails_are_for_staff_only(gs, db):
    gs.add_confirmed(gs.write_many(1))
    blob = Blob.objects.get()
    anonymous = Client().get(f"/admin/galleries/blob/{blob.pk}/image/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    plain = Client()
    plain.force_login(get_user_model().objects.create_user("plain", password="pw-123456"))
    assert plain.get(f"/admin/galleries/blob/{blob.pk}/image/").status_code == 302


@pytest.mark.parametrize("url", ["/admin/galleries/gallery/", "/admin/galleries/galleryhistory/",
                                 "/admin/galleries/pendingoperation/?status__exact=pending&age=1h",
                                 "/admin/galleries/blob/", "/admin/galleries/accountimage/"])
def test_pages_load(staff, gs, url):
    gs.add_confirmed(gs.write_many(1))
    gs.prepare(source="workspace", workspace_paths=gs.write_many(1, start=5))
    assert staff.get(url).status_code == 200


def test_pending_operations_filter_and_expire_action(staff, gs):
    gs.prepare(source="workspace", workspace_paths=gs.write_many(1))
    PendingOperation.objects.update(created_at=timezone.now() - timedelta(days=8))
    page = staff.get("/admin/galleries/pendingoperation/?age=older").content.decode()
    assert PendingOperation.objects.get().public_id in page
    assert PendingOperation.objects.get().public_id not in staff.get("/admin/galleries/pendingoperation/?age=1h").content.decode()
    staff.post("/admin/galleries/pendingoperation/", {"action": "expire", "_selected_action": [PendingOperation.objects.get().pk]})
    assert PendingOperation.objects.get().status == OperationStatus.EXPIRED


def test_operations_expire_command(gs):
    gs.prepare(source="workspace", workspace_paths=gs.write_many(1))
    PendingOperation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    out = io.StringIO()
    call_command("arkme_operations", "expire", stdout=out)
    assert out.getvalue().strip() == "Expired 1 pending operation(s)."
    assert PendingOperation.objects.get().status == OperationStatus.EXPIRED
