"""Peak resident memory of a prepare and of its confirm, per worst-case input the limits allow,
as a multiple of one decoded image (width × height × bytes per pixel).

Each input runs in a fresh process, so nothing else has raised the peak; before each phase
the C allocator gives back what it kept of freed memory (``malloc_trim``), so that the idle
reading is the memory in use, and the kernel's high-water mark is reset after it
(``/proc/self/clear_refs``).
An operation holds two images of the kind, to show that images in one add do not pile up
(one is in memory at a time). The goal is 1.25× one decoded image: room for the encoder's
output and buffers, no second full-size copy.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .common import Result

GOAL = 1.25
PER_OPERATION = 2
WORST = [
    "flat rgba png 4096², turned, ICC",
    "flat rgba png 4096²",
    "photo jpeg 12 Mpx, turned, ICC",
    "photo jpeg 12 Mpx, upright",
    "noise png 1180²",
    # Pillow's path alone until 2026-12-06 (palettes, 16-bit colour, CMYK) and still (GIF).
    "palette png 4096²",
    "palette png 4096², turned, P3",
    "rgba 16-bit png 4096², turned, P3",
    "gif 4096²",
    "cmyk jpeg 4096², turned, CMYK profile",
    "cmyk jpeg 4096², upright",
]


def _status(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> int:
    import ctypes
    import gc

    gc.collect()
    # What the C allocator kept of memory freed before (making the inputs, the warm-up, the
    # prepare before its confirm) goes back to the system first: kept, it was counted as idle
    # and then reused unseen, and a phase that allocated a whole decoded image read 0 MiB.
    ctypes.CDLL(None).malloc_trim(0)
    idle = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return idle


def measure(kind_name: str) -> dict:
    from pathlib import Path

    from django.conf import settings
    from PIL import Image

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.models import AgentSession, Message
    from galleries.services.extensions import extension_create
    from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add

    from .images import KIND

    kind = KIND[kind_name]
    root = Path(settings.ARKME_WORKSPACE_ROOT) / "memory"
    root.mkdir(parents=True, exist_ok=True)
    names = [f"{seed}.{kind.extension}" for seed in range(PER_OPERATION)]
    for seed, name in enumerate(names):
        (root / name).write_bytes(kind.make(seed))
    with Image.open(root / names[0]) as image:
        decoded = image.size[0] * image.size[1] * len(image.getbands())
    account = Account.objects.create(display_name="Memory")
    client, _ = dsh_client_create(name="bench-memory")
    session = AgentSession.objects.create(client=client, account=account, profile="business", workspace="memory")
    # Warm every code path once on small images (Pillow's and libvips', whose loaders,
    # encoders and thread pool load on first use), so libraries do not count as the add's.
    Image.new("RGB", (400, 400), (9, 9, 9)).save(root / "warm.png", "PNG")
    warm_exif = Image.Exif()
    warm_exif[0x0112] = 6
    turned = {"exif": warm_exif.tobytes()}
    Image.new("RGB", (400, 400), (9, 9, 90)).save(root / "warm.jpg", "JPEG", **turned)
    Image.new("RGB", (400, 400), (90, 9, 9)).save(root / "warm.webp", "WEBP")
    # The other paths: RGBA lent to libvips for a turn, a palette written turned, CMYK, GIF.
    Image.new("RGBA", (400, 400), (9, 90, 9, 99)).save(root / "warm-rgba.png", "PNG", **turned)
    Image.new("RGB", (400, 400), (90, 90, 9)).convert("P").save(root / "warm-palette.png", "PNG", **turned)
    Image.new("CMYK", (400, 400), (9, 90, 9, 9)).save(root / "warm-cmyk.jpg", "JPEG", **turned)
    Image.new("P", (400, 400), 9).save(root / "warm.gif", "GIF")
    warm_paths = ["warm.png", "warm.jpg", "warm.webp", "warm-rgba.png", "warm-palette.png", "warm-cmyk.jpg", "warm.gif"]
    warm = extension_create(owner=account, name="warm").public_id
    op = gallery_prepare_add(account=account, session=session, extension=warm,
                             source={"source": "workspace", "workspace_paths": warm_paths}).public_id
    Message.objects.create(session=session, message_id="warm", text="确认")
    gallery_confirm_add(account=account, session=session, extension=warm, operation=op)

    extension = extension_create(owner=account, name="memory").public_id
    idle = _reset_peak()
    op = gallery_prepare_add(account=account, session=session, extension=extension,
                             source={"source": "workspace", "workspace_paths": names}).public_id
    prepare = _status("VmHWM") - idle
    Message.objects.create(session=session, message_id="yes", text="确认")
    idle = _reset_peak()
    gallery_confirm_add(account=account, session=session, extension=extension, operation=op)
    confirm = _status("VmHWM") - idle
    return {"decoded_mib": decoded / 2 ** 20, "prepare_mib": prepare / 2 ** 20, "confirm_mib": confirm / 2 ** 20}


def run() -> Result:
    detail: dict[str, str] = {}
    worst = 0.0
    for name in WORST:
        # A fresh process with its own folder and database (bench.settings makes them).
        env = {k: v for k, v in os.environ.items()
               if k not in ("ARKME_BENCH_DIR", "ARKME_MEDIA_ROOT", "ARKME_WORKSPACE_ROOT", "DATABASE_URL")}
        # As the Procfile starts the web process: its threads share one malloc arena.
        env.setdefault("MALLOC_ARENA_MAX", "1")
        output = subprocess.run([sys.executable, "-m", "bench.peak_memory", name], env=env, check=True,
                                capture_output=True, text=True).stdout
        data = json.loads(output.strip().splitlines()[-1])
        ratios = [data[f"{phase}_mib"] / data["decoded_mib"] for phase in ("prepare", "confirm")]
        worst = max(worst, *ratios)
        detail[name] = (f"prepare {ratios[0]:.2f}× ({data['prepare_mib']:.0f} MiB), confirm {ratios[1]:.2f}× "
                        f"({data['confirm_mib']:.0f} MiB) of one decoded image ({data['decoded_mib']:.0f} MiB)")
    return Result("peak_memory", round(worst, 2), "× one decoded image, worst input",
                  f"the decoded image itself; {PER_OPERATION} images per add, one in memory at a time",
                  f"≤ {GOAL}×", worst <= GOAL, detail)


if __name__ == "__main__":
    from .common import setup_django

    setup_django()
    print(json.dumps(measure(sys.argv[1])))
