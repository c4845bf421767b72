from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from galleries.services.account_images import account_image_create, image_ref_for
from tests.support import images

_ids = itertools.count(1)


@dataclass
class GallerySession:
    dsh: object
    session: str
    workspace: Path
    extension: str

    def add(self, **arguments):
        return self.dsh.execute(self.session, "arkme_extension_preview_add",
                                {"extension": self.extension, **arguments})

    def prepare(self, **source):
        return self.add(action="prepare", **source)

    def confirm(self, operation, extension=None):
        return self.dsh.execute(self.session, "arkme_extension_preview_add",
                                {"action": "confirm", "extension": extension or self.extension, "operation": operation})

    def cancel(self, operation):
        return self.add(action="cancel", operation=operation)

    def say(self, text="", files=()):
        data = {"id": f"m{next(_ids)}", "text": text}
        if files:
            data["attachments"] = [SimpleUploadedFile(name, content, "application/octet-stream") for name, content in files]
            return self.dsh.api.post(f"/dsh/v1/sessions/{self.session}/messages", data, format="multipart")
        return self.dsh.post(f"sessions/{self.session}/messages", data)

    def write(self, name, data):
        from tests.support.dsh import LEDGER

        LEDGER.secrets.add(name)
        path = self.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return name

    def write_many(self, count, start=0):
        return [self.write(f"img{i}.png", images.png((400, 400), (i * 9 % 256, 40, 200 - i))) for i in range(start, start + count)]

    def gallery(self):
        result = self.dsh.execute(self.session, "arkme_context", {}).json()["result"]
        return next(e["gallery"] for e in result["extensions"] if e["extension"] == self.extension)

    def add_confirmed(self, paths):
        prepared = self.prepare(source="workspace", workspace_paths=paths)
        assert prepared.status_code == 200, prepared.content
        self.say("确认")
        confirmed = self.confirm(prepared.json()["result"]["operation"])
        assert confirmed.status_code == 200, confirmed.content
        return confirmed.json()["result"]


@pytest.fixture
def gs(dsh, world) -> GallerySession:
    root = Path(settings.ARKME_WORKSPACE_ROOT) / "ws"
    root.mkdir(parents=True, exist_ok=True)
    view = dsh.open_session(world.alice, workspace="ws")
    dsh.put(f"sessions/{view['session']}/phases/attachments")
    return GallerySession(dsh=dsh, session=view["session"], workspace=root, extension=world.alice_ext.public_id)


@pytest.fixture
def logos(world):
    alice = account_image_create(owner=world.alice, name="alice-logo", data=images.png((512, 512), (1, 2, 3)))
    bob = account_image_create(owner=world.bob, name="bob-logo", data=images.png((512, 512), (3, 2, 1)))
    refs = {"alice": image_ref_for(alice), "bob": image_ref_for(bob)}
    from tests.support.dsh import LEDGER

    LEDGER.secrets.update(refs.values())
    return refs
