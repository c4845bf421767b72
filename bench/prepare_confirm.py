"""prepare + 确认 + confirm of 20 workspace PNGs of about 4 MiB each on filesystem storage,
against the same libraries doing the irreducible work once: read, sha256, Pillow decode,
metadata-free encode, store.

The PNGs are upright and have no colour profile, so the product keeps their image chunks
and encodes nothing. Beside the figure, the same flow is timed for PNGs that carry an EXIF
orientation, which must be turned and so decoded and encoded again, in prepare and again
in confirm."""
from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
from pathlib import Path

from .common import Result, paired_medians

IMAGES = 20
SIDE = 1180  # random RGB noise: a PNG of about 4 MiB


def noise_png(seed: int, *, orientation: int | None = None) -> bytes:
    from PIL import Image

    image = Image.frombytes("RGB", (SIDE, SIDE), hashlib.shake_256(str(seed).encode()).digest(SIDE * SIDE * 3))
    extra = {}
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        extra["exif"] = exif.tobytes()
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6, **extra)
    return out.getvalue()


def workspace(root: Path, *, orientation: int | None = None) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(IMAGES):
        (root / f"{i}.png").write_bytes(noise_png(i, orientation=orientation))
        names.append(f"{i}.png")
    return names


def run() -> Result:
    from django.conf import settings
    from django.core.files.storage import storages
    from PIL import Image

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.models import AgentSession, Message
    from galleries.models import Blob, GalleryItem, PendingOperation
    from galleries.services.extensions import extension_create
    from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add

    root = Path(settings.ARKME_WORKSPACE_ROOT) / "bench"
    names = workspace(root)
    sizes = [(root / n).stat().st_size for n in names]
    account = Account.objects.create(display_name="Bench prepare")
    client, _ = dsh_client_create(name="bench-prepare")
    sessions = {folder: AgentSession.objects.create(client=client, account=account, profile="business",
                                                    workspace=folder) for folder in ("bench", "bench-turned")}
    counter = iter(range(10 ** 6))
    media = Path(storages["blobs"].location)

    def product(session=sessions["bench"]):
        extension = extension_create(owner=account, name=f"bench-{next(counter)}")
        op = gallery_prepare_add(account=account, session=session, extension=extension.public_id,
                                 source={"source": "workspace", "workspace_paths": names}).public_id
        Message.objects.create(session=session, message_id=f"m{next(counter)}", text="确认")
        gallery_confirm_add(account=account, session=session, extension=extension.public_id, operation=op)
        # The next round stores everything again.
        GalleryItem.objects.all().delete()
        Blob.objects.all().delete()
        PendingOperation.objects.all().delete()
        shutil.rmtree(media / "blobs", ignore_errors=True)

    target = Path(tempfile.mkdtemp(prefix="arkme-bench-store-"))

    def baseline(root=root):
        for name in names:
            data = (root / name).read_bytes()
            hashlib.sha256(data).hexdigest()
            image = Image.open(io.BytesIO(data))
            image.load()
            out = io.BytesIO()
            image.save(out, "PNG", compress_level=6)
            encoded = out.getvalue()
            digest = hashlib.sha256(encoded).hexdigest()
            (target / digest).write_bytes(encoded)
        shutil.rmtree(target)
        target.mkdir()

    ours, floor = paired_medians(product, baseline, rounds=3, warmup=1)
    ratio = ours / floor
    turned_root = Path(settings.ARKME_WORKSPACE_ROOT) / "bench-turned"
    workspace(turned_root, orientation=6)
    turned, turned_floor = paired_medians(lambda: product(sessions["bench-turned"]),
                                          lambda: baseline(turned_root), rounds=2, warmup=1)
    return Result("prepare_confirm_20", round(ratio, 3), "× one-pass floor",
                  "read, sha256, Pillow decode, metadata-free encode, store: once per image",
                  "≤ 1.3×", ratio <= 1.3,
                  {"product_s": round(ours, 3), "baseline_s": round(floor, 3),
                   "mean_file_mib": round(sum(sizes) / len(sizes) / 2 ** 20, 2),
                   "turned_product_s": round(turned, 3), "turned_baseline_s": round(turned_floor, 3),
                   "turned_ratio": round(turned / turned_floor, 3)})
