"""Images per add from 1 to 20 (a gallery's capacity): what one more image costs an add.

For each path an image can take (encoded: a photograph turned with a colour profile; kept: a
screenshot PNG; svg: a drawing), an add of n different images of that kind from the
workspace (prepare, the human's 确认, confirm, on filesystem storage) at n = 1, 5, 10 and 20.
The figure is the cost one more image adds over the curve's upper half (10 → 20) against its
lower half (1 → 10) (``bench/curves.py``), the worst kind; the statements a confirm makes are
counted at every size and may grow by one an image at most (today each stored image's blob is
looked up by its digest, one indexed statement; a second per image would be a regression). Small images (the curve's shape is what gates, not the codec's
speed); in-process, on the embedded default. An SVG's render runs in a render process, whose
CPU time is not this process's: the svg curve counts the product's side of it.
"""
from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any, Callable

from .common import Result
from .curves import GOAL, curve_seconds, marginal_ratio

SIZES = (1, 5, 10, 20)
BOTTOM, TOP = (1, 10), (10, 20)


def kinds() -> dict[str, tuple[str, Callable[[int], bytes]]]:
    """Name → (file extension, maker of the seed's image)."""
    from PIL import Image, ImageDraw

    from . import images

    def save(image: Any, fmt: str, **extra: Any) -> bytes:
        out = io.BytesIO()
        image.save(out, fmt, **extra)
        return out.getvalue()

    def screenshot(seed: int) -> bytes:
        image = Image.new("RGB", (480, 360), (246, 247, 249))
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 0, 480, 24), fill=(32, 40, 56))
        for row in range(12):
            draw.text((40, 30 + row * 26), f"row {seed}-{row} " * 4, fill=(40, 40, 40))
        return save(image, "PNG", compress_level=6)

    def drawing(seed: int) -> bytes:
        # The drawing's paths are the same whatever the seed: a mark of the seed's own makes
        # each render a different image (the same render would be one image, stored once).
        svg = images._svg("300 paths")(seed)
        end = svg.rindex(b"</svg>")
        mark = f'<rect x="{seed % 200}" y="{seed // 200}" width="9" height="9" fill="#{seed * 7919 % 0xFFFFFF:06x}"/>'
        return svg[:end] + mark.encode() + svg[end:]

    turn = {"exif": images._exif(6), "icc_profile": images._icc()}
    return {
        "photo jpeg 640×480, turned, ICC (encoded)": (
            "jpg", lambda seed: save(images._photo((640, 480), seed), "JPEG", quality=85, **turn)),
        "screenshot png 480×360 (kept)": ("png", screenshot),
        "svg 300 paths (svg)": ("svg", lambda seed: drawing(seed)),
    }


def run(*, rounds: int = 9, only: list[str] | None = None) -> Result:
    from django.conf import settings
    from django.core.files.storage import storages
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.models import AgentSession, Message
    from galleries.models import Blob, GalleryItem, PendingOperation
    from galleries.services.extensions import extension_create
    from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add

    account = Account.objects.create(display_name="Bench confirm growth")
    client, _ = dsh_client_create(name="bench-confirm-growth")
    media = Path(storages["blobs"].location)
    counter = iter(range(10 ** 7))
    detail: dict[str, object] = {}
    statements: dict[str, dict[int, int]] = {}
    worst = 0.0

    def reset() -> None:
        # Untimed: the next add stores everything again.
        GalleryItem.objects.all().delete()
        Blob.objects.all().delete()
        PendingOperation.objects.all().delete()
        shutil.rmtree(media / "blobs", ignore_errors=True)

    for index, (kind, (suffix, make)) in enumerate(kinds().items()):
        if only and kind not in only:
            continue
        calls: dict[int, Callable[[], object]] = {}
        confirms: dict[int, Callable[[], object]] = {}
        for size in SIZES:
            folder = f"curve-{index}-{size}"
            root = Path(settings.ARKME_WORKSPACE_ROOT) / folder
            root.mkdir(parents=True, exist_ok=True)
            names = [f"{seed}.{suffix}" for seed in range(size)]
            for seed, name in enumerate(names):
                (root / name).write_bytes(make(1000 * index + seed))
            session = AgentSession.objects.create(client=client, account=account, profile="business",
                                                  workspace=folder)
            extension = extension_create(owner=account, name=folder).public_id

            def prepare(session=session, names=names, extension=extension) -> str:
                op = gallery_prepare_add(account=account, session=session, extension=extension,
                                         source={"source": "workspace", "workspace_paths": names}).public_id
                Message.objects.create(session=session, message_id=f"m{next(counter)}", text="确认")
                return op

            def add(session=session, extension=extension, size=size, prepare=prepare) -> None:
                confirmed = gallery_confirm_add(account=account, session=session, extension=extension,
                                                operation=prepare())
                if confirmed.added != size:
                    raise RuntimeError(f"an add of {size} images added {confirmed.added}"
                                       f" ({confirmed.already_present} present)")

            def confirm_only(session=session, extension=extension, prepare=prepare) -> int:
                op = prepare()
                with CaptureQueriesContext(connection) as captured:
                    gallery_confirm_add(account=account, session=session, extension=extension, operation=op)
                return len(captured)

            calls[size], confirms[size] = add, confirm_only
        counted = {}
        for size in SIZES:
            counted[size] = int(confirms[size]())  # type: ignore[call-overload]
            reset()
        statements[kind] = counted
        cost = curve_seconds(calls, SIZES, rounds=rounds, warmup=1, reset=reset)
        ratio = marginal_ratio(cost, BOTTOM, TOP)
        worst = max(worst, ratio)
        slopes = ", ".join(f"{(cost[high] - cost[low]) / (high - low) * 1000:.2f} ms over {low}→{high}"
                           for low, high in (BOTTOM, TOP))
        detail[kind] = (f"{ratio:.2f}× (an image adds {slopes}; an add: "
                        + ", ".join(f"{n}: {t * 1000:.1f} ms" for n, t in cost.items())
                        + f"; confirm statements {counted})")
    per_image = max((by_size[SIZES[-1]] - by_size[SIZES[0]]) / (SIZES[-1] - SIZES[0])
                    for by_size in statements.values())
    return Result("confirm_growth", round(worst, 3), "× the cost an image adds, 10→20 against 1→10 (worst kind)",
                  "itself over the lower half of the curve, small images of three paths",
                  f"≤ {GOAL:g}× per image on every kind; a confirm's statements ≤ 1 more an image",
                  worst <= GOAL and per_image <= 1, {**detail, "statements an image adds": round(per_image, 2)})
