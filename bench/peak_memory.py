"""Peak resident memory above idle while preparing 20 images of about 5 MiB each.

Runs in a fresh process so that nothing else has raised the peak; the kernel's high-water
mark is reset (``/proc/self/clear_refs``) after the idle reading."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .common import Result

IMAGES = 20
SIDE = 1290  # random RGB noise: a PNG of about 4.8 MiB


def _status(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def measure() -> dict:
    import hashlib
    import io
    from pathlib import Path

    from django.conf import settings
    from PIL import Image

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.models import AgentSession
    from galleries.services.extensions import extension_create
    from galleries.services.gallery_add import gallery_prepare_add

    root = Path(settings.ARKME_WORKSPACE_ROOT) / "memory"
    root.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(IMAGES):
        image = Image.frombytes("RGB", (SIDE, SIDE), hashlib.shake_256(f"m{i}".encode()).digest(SIDE * SIDE * 3))
        out = io.BytesIO()
        image.save(out, "PNG", compress_level=1)
        (root / f"{i}.png").write_bytes(out.getvalue())
        names.append(f"{i}.png")
    account = Account.objects.create(display_name="Memory")
    extension = extension_create(owner=account, name="memory")
    client, _ = dsh_client_create(name="bench-memory")
    session = AgentSession.objects.create(client=client, account=account, profile="business", workspace="memory")
    # Warm every code path once on a small image, so imports do not count as the prepare's.
    image = Image.new("RGB", (400, 400), (9, 9, 9))
    image.save(root / "warm.png", "PNG")
    gallery_prepare_add(account=account, session=session, extension=extension_create(owner=account, name="warm").public_id,
                        source={"source": "workspace", "workspace_paths": ["warm.png"]})
    import gc
    gc.collect()
    idle = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    gallery_prepare_add(account=account, session=session, extension=extension.public_id,
                        source={"source": "workspace", "workspace_paths": names})
    peak = _status("VmHWM")
    sizes = [(root / n).stat().st_size for n in names]
    return {"idle_mib": idle / 2 ** 20, "peak_mib": peak / 2 ** 20,
            "mean_file_mib": sum(sizes) / len(sizes) / 2 ** 20}


def run() -> Result:
    env = {**os.environ}
    output = subprocess.run([sys.executable, "-m", "bench.peak_memory"], env=env, check=True,
                            capture_output=True, text=True).stdout
    data = json.loads(output.strip().splitlines()[-1])
    above = data["peak_mib"] - data["idle_mib"]
    return Result("prepare_peak_memory", round(above, 1), "MiB above idle", "—", "≤ 150 MiB", above <= 150,
                  {k: round(v, 1) for k, v in data.items()})


if __name__ == "__main__":
    from .common import setup_django

    setup_django()
    print(json.dumps(measure()))
