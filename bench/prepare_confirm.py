"""prepare + 确认 + confirm on filesystem storage, per kind of image, against the floor of
``bench.gallery_floors``: the least work the contract requires, written with the libraries
alone (read, fingerprints, decode, the stream and SVG checks, turn, colour-convert, encode,
render once, one durable write) and the add's required database work in plain SQL
(``bench.gallery_books``).

Each kind is a workspace of ``PER_KIND`` different images of that kind (``bench.images``),
added in one operation. The figure is the worst kind's ratio; every kind's ratio is shown.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .common import Result, paired_medians
from .images import KINDS

PER_KIND = 3
GOAL = 1.2


def run(*, kinds: list[str] | None = None, rounds: int = 3) -> Result:
    from django.conf import settings
    from django.core.files.storage import storages

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.models import AgentSession, Message
    from galleries.models import Blob, GalleryItem, PendingOperation
    from galleries.services.extensions import extension_create
    from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add

    from . import gallery_floors as floor
    from .gallery_books import Books

    account = Account.objects.create(display_name="Bench prepare")
    client, _ = dsh_client_create(name="bench-prepare")
    media = Path(storages["blobs"].location)
    counter = iter(range(10 ** 6))
    store = Path(tempfile.mkdtemp(prefix="arkme-bench-store-"))
    detail: dict[str, object] = {}
    worst = 0.0
    for index, kind in enumerate(KINDS):
        if kinds and kind.name not in kinds:
            continue
        folder = f"kind-{index}"
        root = Path(settings.ARKME_WORKSPACE_ROOT) / folder
        root.mkdir(parents=True, exist_ok=True)
        names = [f"{seed}.{kind.extension}" for seed in range(PER_KIND)]
        for seed, name in enumerate(names):
            (root / name).write_bytes(kind.make(seed))
        paths = [root / name for name in names]
        session = AgentSession.objects.create(client=client, account=account, profile="business", workspace=folder)

        extension = extension_create(owner=account, name=f"bench-{index}").public_id

        def product(session=session, names=names, extension=extension):
            op = gallery_prepare_add(account=account, session=session, extension=extension,
                                     source={"source": "workspace", "workspace_paths": names}).public_id
            Message.objects.create(session=session, message_id=f"m{next(counter)}", text="确认")
            gallery_confirm_add(account=account, session=session, extension=extension, operation=op)

        def baseline(paths=paths, session=session, extension=extension):
            floor.add(paths, store, Books(account.pk, session.pk, extension),
                      lambda: Message.objects.create(session=session, message_id=f"m{next(counter)}", text="确认"))

        def reset():
            # Untimed: the next round stores everything again.
            GalleryItem.objects.all().delete()
            Blob.objects.all().delete()
            PendingOperation.objects.all().delete()
            shutil.rmtree(media / "blobs", ignore_errors=True)
            for written in store.iterdir():
                written.unlink()

        ours, least = paired_medians(product, baseline, rounds=rounds, warmup=1, reset=reset)
        ratio = ours / least
        worst = max(worst, ratio)
        detail[kind.name] = f"{ratio:.2f}× ({kind.path}: {ours * 1000:.0f} ms against {least * 1000:.0f} ms)"
    shutil.rmtree(floor.staging(store), ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    return Result("prepare_confirm", round(worst, 3), "× floor, worst kind",
                  f"the contract's least work per path, {PER_KIND} images of a kind per add",
                  f"≤ {GOAL}× on every kind", worst <= GOAL, detail)
