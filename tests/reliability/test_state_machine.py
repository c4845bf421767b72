"""A Hypothesis state machine drives the DSH API (messages, mount and dispose, prepare,
confirm, cancel, delete, reorder, approvals) against a simple model of one gallery, and
checks the invariants after every step."""
from __future__ import annotations

import itertools

import pytest
from django.conf import settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from arkme.accounts.models import Account
from galleries.ingest.process_image import process_image
from galleries.models import Gallery, GalleryHistory, GalleryItem
from galleries.services.extensions import extension_create
from tests.support import images
from tests.support.dsh import make_dsh
from tests.support.errors import assert_error

pytestmark = pytest.mark.django_db
POOL = 6
CAPACITY = 4
RUN = itertools.count()


class GalleryMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        n = next(RUN)
        self.dsh = make_dsh(f"machine-{n}")
        account = Account.objects.create(display_name=f"Machine {n}")
        self.extension = extension_create(owner=account, name=f"ext-{n}")
        root = settings.ARKME_WORKSPACE_ROOT / f"m{n}"
        root.mkdir(parents=True, exist_ok=True)
        self.files, self.shas = [], []
        for i in range(POOL):
            data = images.png((400, 400), (i * 40, 10, 10))
            (root / f"{i}.png").write_bytes(data)
            self.files.append(f"{i}.png")
            self.shas.append(process_image(data).sha256)
        self.session = self.dsh.open_session(account, workspace=f"m{n}")["session"]
        self.messages = itertools.count()
        # the model
        self.items: list[int] = []          # file indices, in gallery order
        self.revision = 0
        self.mounted = False
        self.pending: tuple[str, tuple[int, ...]] | None = None
        self.confirmed_since_prepare = False
        self.steps = 0

    def execute(self, tool, arguments, approval=None):
        self.steps += 1
        extra = {"approval": approval} if approval else {}
        return self.dsh.execute(self.session, tool, {"extension": self.extension.public_id, **arguments}, **extra)

    @initialize()
    def start_with_two_images(self):
        """Every run starts mounted, with two images added through the whole flow."""
        self.mount()
        self.prepare([0, 1])
        self.say("确认")
        self.confirm()
        assert self.items == [0, 1]

    # -- the conversation -------------------------------------------------------------------
    @rule()
    def mount(self):
        assert self.dsh.put(f"sessions/{self.session}/phases/attachments").status_code == 200
        self.mounted = True

    @rule()
    def dispose(self):
        assert self.dsh.delete(f"sessions/{self.session}/phases/attachments").status_code == 200
        self.mounted = False

    @rule(text=st.sampled_from(["确认", " 确认。", "确认!", "不", "hello"]))
    def say(self, text):
        response = self.dsh.post(f"sessions/{self.session}/messages", {"id": f"m{next(self.messages)}", "text": text})
        assert response.status_code == 201
        self.confirmed_since_prepare = text.strip().rstrip("。!") == "确认"

    # -- adding -------------------------------------------------------------------------------
    @rule(files=st.lists(st.integers(0, POOL - 1), min_size=1, max_size=3, unique=True))
    def prepare(self, files):
        response = self.execute("arkme_extension_preview_add",
                                {"action": "prepare", "source": "workspace",
                                 "workspace_paths": [self.files[i] for i in files]})
        if not self.mounted:
            assert_error(response, 404, "unknown_tool")
            return
        if self.pending and self.pending[1] != tuple(files):
            assert_error(response, 409, "operation_pending")
            return
        new = len({self.shas[i] for i in files} - {self.shas[i] for i in self.items})
        if self.pending is None and len(self.items) + new > CAPACITY:
            assert_error(response, 409, "capacity_exceeded")
            return
        assert response.status_code == 200, response.content
        body = response.json()["result"]
        assert [image["already_present"] for image in body["images"]] == [i in self.items for i in files]
        if self.pending is None:
            self.confirmed_since_prepare = False
        self.pending = (body["operation"], tuple(files))

    @precondition(lambda self: self.pending is not None)
    @rule()
    def confirm(self):
        operation, files = self.pending
        response = self.execute("arkme_extension_preview_add", {"action": "confirm", "operation": operation})
        if not self.mounted:
            assert_error(response, 404, "unknown_tool")
            return
        if not self.confirmed_since_prepare:
            assert_error(response, 409, "confirmation_required")
            return
        self.pending = None
        new = [i for i in files if i not in self.items]
        if len(self.items) + len(new) > CAPACITY:  # the gallery filled up since the prepare
            assert_error(response, 409, "capacity_exceeded")
            return
        assert response.status_code == 200, response.content
        assert response.json()["result"]["added"] == len(new)
        self.items += new
        self.revision += 1

    @precondition(lambda self: self.pending is not None)
    @rule()
    def cancel(self):
        response = self.execute("arkme_extension_preview_add", {"action": "cancel", "operation": self.pending[0]})
        if not self.mounted:
            assert_error(response, 404, "unknown_tool")
            return
        assert response.status_code == 200
        self.pending = None

    # -- changing ------------------------------------------------------------------------------
    def item_ids(self):
        gallery = Gallery.objects.get(extension=self.extension)
        return list(gallery.items.order_by("position").values_list("public_id", flat=True))

    def approved(self, tool, arguments):
        decision = self.dsh.pre_execute(self.session, tool, {"extension": self.extension.public_id, **arguments}).json()
        assert decision["decision"] == "ask", decision
        return self.execute(tool, arguments, approval=decision["approval"])

    @precondition(lambda self: self.items)
    @rule(data=st.data(), stale=st.booleans())
    def delete(self, data, stale):
        ids = self.item_ids()
        chosen = data.draw(st.lists(st.sampled_from(range(len(ids))), min_size=1, max_size=len(ids), unique=True))
        revision = self.revision - 1 if stale and self.revision else self.revision
        response = self.approved("arkme_extension_preview_delete",
                                 {"items": [ids[i] for i in chosen], "revision": revision})
        if revision != self.revision:
            assert_error(response, 409, "revision_conflict")
            return
        assert response.status_code == 200, response.content
        self.items = [item for position, item in enumerate(self.items) if position not in chosen]
        self.revision += 1

    @precondition(lambda self: self.items)
    @rule(data=st.data())
    def reorder(self, data):
        ids = self.item_ids()
        order = data.draw(st.permutations(range(len(ids))))
        response = self.approved("arkme_extension_preview_reorder", {"order": [ids[i] for i in order], "revision": self.revision})
        assert response.status_code == 200, response.content
        self.items = [self.items[i] for i in order]
        self.revision += 1

    @rule()
    def replay_an_approval(self):
        decision = self.dsh.pre_execute(self.session, "arkme_id_change", {"arkme_id": "machine_id"}).json()
        other = self.dsh.execute(self.session, "arkme_id_change", {"arkme_id": "other_id1"}, approval=decision["approval"])
        assert_error(other, 403, "approval_required", details={"reason": "other_arguments"})

    # -- invariants ----------------------------------------------------------------------------
    @invariant()
    def gallery_matches_the_model(self):
        gallery = Gallery.objects.get(extension=self.extension)
        items = list(GalleryItem.objects.filter(gallery=gallery).order_by("position").select_related("blob"))
        assert [item.position for item in items] == list(range(1, len(items) + 1))
        assert [item.blob.sha256 for item in items] == [self.shas[i] for i in self.items]
        assert len(items) <= CAPACITY
        assert gallery.revision == self.revision == GalleryHistory.objects.filter(gallery=gallery).count()

    def teardown(self):
        self.figures.add("state_machine_steps", self.steps)


def test_the_api_keeps_the_gallery_model(settings, figures):
    settings.ARKME_GALLERY_CAPACITY = CAPACITY
    GalleryMachine.figures = figures
    run_state_machine_as_test(GalleryMachine, settings=hypothesis_settings(
        max_examples=30, stateful_step_count=40, deadline=None, database=None, derandomize=True,
        suppress_health_check=list(HealthCheck)))
