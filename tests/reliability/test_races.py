"""Races on PostgreSQL: threads with their own connections, released together by a barrier."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from django.conf import settings

from arkme.conversations.clients import dsh_client_create
from arkme.conversations.models import AgentSession, Message
from galleries.models import Gallery, GalleryHistory, GalleryItem, OperationStatus, PendingOperation
from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add
from galleries.services.gallery_edit import gallery_delete_items, gallery_reorder_items
from tests.support import images
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 32
ROUNDS = 10
EXPECTED = {"revision_conflict", "unknown_item", "invalid_order", "operation_confirmed", "capacity_exceeded",
            "operation_pending"}


def check_invariants(gallery: Gallery) -> None:
    gallery.refresh_from_db()
    items = list(GalleryItem.objects.filter(gallery=gallery).order_by("position"))
    assert [item.position for item in items] == list(range(1, len(items) + 1))
    assert len({item.blob_id for item in items}) == len(items)
    assert len(items) <= settings.ARKME_GALLERY_CAPACITY
    assert gallery.revision == GalleryHistory.objects.filter(gallery=gallery).count()


@pytest.fixture
def scene(postgres, world, tmp_path, settings):
    client, _ = dsh_client_create(name="race")
    session = AgentSession.objects.create(client=client, account=world.alice, profile="business", workspace="race")
    root = settings.ARKME_WORKSPACE_ROOT / "race"
    root.mkdir(parents=True, exist_ok=True)
    counter = iter(range(10_000))

    def new_files(count):
        names = []
        for _ in range(count):
            n = next(counter)
            name = f"f{n}.png"
            (root / name).write_bytes(images.png((400, 400), (n % 256, (n // 256) % 256, 77)))
            names.append(name)
        return names

    def prepare(paths):
        return gallery_prepare_add(account=world.alice, session=session, extension=world.alice_ext.public_id,
                                   source={"source": "workspace", "workspace_paths": paths}).public_id

    def say_confirm():
        Message.objects.create(session=session, message_id=f"m{next(counter)}", text="确认")

    def confirm(operation):
        return gallery_confirm_add(account=world.alice, session=session, extension=world.alice_ext.public_id,
                                   operation=operation)

    op = prepare(new_files(6))
    say_confirm()
    confirm(op)
    return world, session, new_files, prepare, say_confirm, confirm


def test_writers_on_one_gallery_lose_no_update(figures, scene):
    world, session, new_files, prepare, say_confirm, confirm = scene
    gallery = Gallery.objects.get(extension=world.alice_ext)
    rng = random.Random(7)
    successes_total = lost = 0
    for _ in range(ROUNDS):
        check_invariants(gallery)
        before = gallery.revision
        operation = prepare(new_files(1))
        say_confirm()
        items = list(GalleryItem.objects.filter(gallery=gallery).order_by("position").values_list("public_id", flat=True))
        workers = [lambda: confirm(operation), lambda: confirm(operation)]
        for index in range(WRITERS - 2):
            if index % 2:
                doomed = [rng.choice(items)]
                workers.append(lambda d=doomed: gallery_delete_items(
                    account=world.alice, extension=world.alice_ext.public_id, items=d, revision=before))
            else:
                order = items[:]
                rng.shuffle(order)
                workers.append(lambda o=order: gallery_reorder_items(
                    account=world.alice, extension=world.alice_ext.public_id, order=o, revision=before))
        outcomes = race(workers)
        crashes = [o for o in outcomes if o[0] == "crash"]
        assert not crashes, crashes
        assert {code for kind, code in outcomes if kind == "error"} <= EXPECTED
        successes = sum(1 for kind, _ in outcomes if kind == "ok")
        assert Counter(kind for kind, _ in outcomes[:2])["ok"] == 1  # one commit per operation
        gallery.refresh_from_db()
        lost += successes - (gallery.revision - before)
        successes_total += successes
        check_invariants(gallery)
        assert PendingOperation.objects.get(public_id=operation).status == OperationStatus.CONFIRMED
        assert GalleryHistory.objects.filter(operation__public_id=operation).count() == 1
    figures.add("race_writers", WRITERS)
    figures.add("race_rounds", ROUNDS)
    figures.add("race_successful_writes", successes_total)
    figures.add("race_lost_updates", lost)
    assert lost == 0


def test_two_prepares_make_one_operation(scene):
    world, session, new_files, prepare, *_ = scene
    a, b = new_files(1), new_files(1)
    outcomes = race([lambda: prepare(a), lambda: prepare(b)])
    assert sorted(kind for kind, _ in outcomes) == ["error", "ok"]
    assert [code for kind, code in outcomes if kind == "error"] == ["operation_pending"]
    assert PendingOperation.objects.filter(status=OperationStatus.PENDING).count() == 1


def test_identical_prepares_share_one_operation(scene):
    world, session, new_files, prepare, *_ = scene
    paths = new_files(2)
    outcomes = race([lambda: prepare(paths) for _ in range(4)])
    assert all(kind == "ok" for kind, _ in outcomes)
    assert len({value for _, value in outcomes}) == 1
