"""The in-process ratios that gate, counted in instructions (``bench/instructions.py``).

Each figure is a product path against its floor (or its peer, or itself at another size),
both driven in the same interpreter on the same SQLite database: the product through its
WSGI handler and real URLconf (``bench.urls``: the product's patterns and the floor views),
as gunicorn calls it; the floors are the views of ``bench/web_floors.py`` and ``bench/bare.py``
and the gallery floor of ``bench/gallery_floors.py``, which use the libraries directly; the
MCP peer is FastMCP (``bench/fastmcp_peer.py``) serving the same definitions, called as an
ASGI app. No server and no database server runs besides: everything counted is in-process.

``python -m bench.counted prepare FOLDER`` builds the world natively (migrations, rows,
images); ``python -m bench.counted measure FOLDER`` is the program cachegrind counts.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

from .common import Result
from .instructions import Counted, collect, counting_env, failures, fork_children, plan, run_counted, write_plan
from .tools_growth import GOAL as GROWTH_GOAL
from .tools_growth import UNITS

# A request allocates; the cyclic collector runs every few hundred allocations, so over 20
# requests where its runs fall moves a figure by up to about 0.5% between two versions of
# unrelated code (the floors' too). Over 200 the brackets lie 0.01% apart and a figure moves
# only with the work a request does.
WEB_N = 200
COMPILE_N = 5
SETS_N = 2  # adds per prepare_confirm kind (of PER_ADD images each), besides the warm-up's
PER_ADD = 3
STALE_POOL = WEB_N + 1
EXTENSIONS = 20
MCP_TOOLS = 7
# ir_tools_growth's sizes: copies of the shipped tools a hybrid session with attachments sees
# (bench/tools_growth.py), the same mix at every size; a test checks SHIPPED_TOOLS is their number.
GROWTH_UNITS = (UNITS[0], UNITS[-1])
SHIPPED_TOOLS = 7
GROWTH_TOOLS = tuple(units * SHIPPED_TOOLS for units in GROWTH_UNITS)


@dataclass(frozen=True)
class Figure:
    name: str
    pairs: tuple[tuple[str, str, str], ...]  # (label, the product's arm, the arm it is against)
    goal: float
    baseline: str
    unit: str = "× its floor's instructions (worst)"
    per: float = 1.0  # a growth figure's ratio is read per item: over the sizes' ratio
    gloss: str = ""  # what the goal means, when it is not against a floor

    @property
    def goal_text(self) -> str:
        if self.gloss:
            return f"≤ {self.goal:g}×{self.gloss}"
        return f"≤ {self.goal:g}× on every path" if len(self.pairs) > 1 else f"≤ {self.goal:g}×"


def _web(label: str, arm: str) -> tuple[str, str, str]:
    return (label, f"web:{arm}:product", f"web:{arm}:floor")


def _grow(label: str, arm: str) -> tuple[str, str, str]:
    return (label, f"grow:{arm}:{GROWTH_UNITS[-1]}", f"grow:{arm}:{GROWTH_UNITS[0]}")


FLOOR = "its floor view (bench/web_floors.py, bench/bare.py) in the same process, instructions"
FIGURES: dict[str, Figure] = {f.name: f for f in [
    Figure("ir_session_view", (_web("GET sessions/{s}", "view"),), 1.1, FLOOR),
    Figure("ir_session_304", (_web("GET sessions/{s}, 304 on its ETag", "304"),), 1.1, FLOOR),
    Figure("ir_session_stale", (_web("GET sessions/{s}, stale (writes the touch)", "stale"),), 1.1, FLOOR),
    Figure("ir_arkme_context", (_web(f"arkme_context through execute, {EXTENSIONS} extensions", "context"),),
           1.1, FLOOR),
    Figure("ir_keyed_execute", (_web("arkme_context with an Idempotency-Key", "keyed"),), 1.1, FLOOR),
    Figure("ir_candidates", (_web("arkme_group_member_candidates", "candidates"),), 1.1, FLOOR),
    Figure("ir_mcp_tools_call", (("tools/call of the echo tool", "mcp:call:product", "mcp:call:peer"),), 1.0,
           f"FastMCP serving the same {MCP_TOOLS} definitions, called as an ASGI app in the same process",
           "× FastMCP's instructions"),
    Figure("ir_mcp_tools_list", (("tools/list", "mcp:list:product", "mcp:list:peer"),), 1.0,
           f"FastMCP serving the same {MCP_TOOLS} definitions, called as an ASGI app in the same process",
           "× FastMCP's instructions"),
    Figure("ir_tools_growth", (_grow("the cold compile of a toolset", "compile"), _grow("GET sessions/{s}", "view"),
                               _grow("GET catalog", "catalog")),
           GROWTH_GOAL, f"itself at {GROWTH_TOOLS[0]} tools (the same mix: the shipped tools once, then "
           f"{GROWTH_UNITS[-1]} times), instructions",
           f"× instructions per tool at {GROWTH_TOOLS[-1]} tools against {GROWTH_TOOLS[0]} (worst)",
           per=GROWTH_UNITS[-1] / GROWTH_UNITS[0], gloss=" per tool (linear) on every path"),
]}
GROWTH_N = {"compile": COMPILE_N, "view": WEB_N, "catalog": WEB_N}


def small_kinds() -> dict[str, Callable[[int], bytes]]:
    """The kinds of ``bench/images.py`` at a small size (the product's least is 320 pixels a
    side): the ratio is what gates, and every kind keeps its path (kept, encoded, svg) and
    what makes it costly (a turn, a profile)."""
    import io

    from PIL import Image, ImageDraw

    from . import images

    def save(image: Any, fmt: str, **extra: Any) -> bytes:
        out = io.BytesIO()
        image.save(out, fmt, **extra)
        return out.getvalue()

    turn = {"exif": images._exif(6), "icc_profile": images._icc()}

    def screenshot(seed: int) -> bytes:
        image = Image.new("RGB", (480, 320), (246, 247, 249))
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 0, 480, 18), fill=(32, 40, 56))
        for row in range(12):
            draw.text((60, 24 + row * 24), f"item-{seed}-{row} " * 3, fill=(40, 40, 40))
        return save(image, "PNG", compress_level=6)

    def flat(seed: int, turned: bool = False) -> bytes:
        image = Image.new("RGBA", (512, 512), (seed % 256, 90, 160, 200))
        image.paste((240, 200, 40, 255), (0, 0, 128, 512))
        return save(image, "PNG", compress_level=6, **(turn if turned else {}))

    return {
        "photo jpeg, turned, ICC": lambda s: save(images._photo((480, 360), s), "JPEG", quality=85, **turn),
        "photo jpeg, upright": lambda s: save(images._photo((480, 360), s), "JPEG", quality=85),
        "screenshot png": screenshot,
        "flat rgba png": flat,
        "flat rgba png, turned, ICC": lambda s: flat(s, turned=True),
        "noise png": lambda s: save(images._noise((320, 320), s), "PNG", compress_level=6),
        "photo webp": lambda s: save(images._photo((480, 320), s), "WEBP", quality=80),
        **{f"svg {name}": images._svg(name) for name in ("simple", "300 paths", "gradients")},
    }


# The quick subset's kinds (``python -m bench --ci``): one per path the product takes, kept,
# encoded (turned, with a profile) and SVG; every kind runs in the full ``make bench``.
CI_KINDS = ["photo jpeg, turned, ICC", "screenshot png", "svg simple"]


def _extension(kind: str) -> str:
    return "svg" if kind.startswith("svg") else {"jpeg": "jpg", "webp": "webp"}.get(kind.split()[1], "png")


def prepare_confirm_figure(kinds: list[str]) -> Figure:
    return Figure("ir_prepare_confirm", tuple((kind, f"pc:{kind}:product", f"pc:{kind}:floor") for kind in kinds),
                  1.2, f"bench/gallery_floors.py, {PER_ADD} small images of a kind per add, instructions",
                  "× its floor's instructions (worst kind)")


# --- the world, built natively before the count ------------------------------------------------


def prepare(folder: Path, kinds: list[str]) -> None:
    from django.core.management import call_command

    from arkme.accounts.models import Account
    from arkme.conversations.clients import dsh_client_create
    from arkme.conversations.models import AgentSession
    from arkme.conversations.sessions import session_open, session_set_attachments
    from galleries.services.extensions import extension_create

    from .web_serving import EXTENSIONS as WORLD_EXTENSIONS
    from .web_serving import account_world

    call_command("migrate", verbosity=0, interactive=False)
    assert WORLD_EXTENSIONS == EXTENSIONS, "the figures' names count the world's extensions"
    base = account_world("counted")
    client, me = base["client"], base["account"]
    stale = AgentSession.objects.bulk_create([AgentSession(client=client, account=me, profile="business")
                                              for _ in range(STALE_POOL)])
    mcp_session = session_open(client=client, account=me.public_id, profile="hybrid").public_id
    session_set_attachments(client=client, public_id=mcp_session, mounted=True)
    world: dict[str, Any] = {
        "key": base["key"], "session": base["session"], "stale": [s.public_id for s in stale],
        "mcp_session": mcp_session, "source_ref": base["source_ref"], "adds": {}}
    makers = small_kinds()
    from django.conf import settings

    adder = Account.objects.create(display_name="Counted adds")
    add_client, _ = dsh_client_create(name="bench-counted-adds")
    for index, kind in enumerate(kinds):
        sets = []
        for number in range(SETS_N + 1):  # the last is the warm-up's
            name = f"kind-{index}-{number}"
            root = Path(settings.ARKME_WORKSPACE_ROOT) / name
            root.mkdir(parents=True, exist_ok=True)
            files = [f"{seed}.{_extension(kind)}" for seed in range(PER_ADD)]
            for seed, file in enumerate(files):
                (root / file).write_bytes(makers[kind](1000 * index + 10 * number + seed))
            add_session = AgentSession.objects.create(client=add_client, account=adder, profile="business",
                                                      workspace=name)
            sets.append({"folder": str(root), "files": files, "session": add_session.public_id,
                         "extension": extension_create(owner=adder, name=name).public_id})
        world["adds"][kind] = {"account": adder.public_id, "sets": sets}
    (folder / "world.json").write_text(json.dumps(world))


# --- the arms, run in forked children of the counted program ---------------------------------


class _Wsgi:
    def __init__(self) -> None:
        from django.core.handlers.wsgi import WSGIHandler

        self.handler = WSGIHandler()

    def __call__(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
        import io

        environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
                   "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
                   "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "testserver", "wsgi.version": (1, 0),
                   "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
                   "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
                   "CONTENT_LENGTH": str(len(body)), **headers}
        status: list[str] = []

        def start_response(line: str, headers: list[tuple[str, str]], exc_info: object = None) -> None:
            status.append(line)
            self.headers = dict(headers)

        response = self.handler(environ, start_response)
        try:
            content = b"".join(response)
        finally:
            response.close()
        return int(status[0][:3]), content


def _expect(answer: tuple[int, bytes], status: int) -> None:
    if answer[0] != status:
        raise RuntimeError(f"answered {answer[0]}, not {status}: {answer[1][:300]!r}")


def _seen(public_ids: list[str], ago: timedelta = timedelta(0)) -> None:
    from django.utils import timezone

    from arkme.conversations.models import AgentSession

    AgentSession.objects.filter(public_id__in=public_ids).update(last_seen_at=timezone.now() - ago)


def _web_arm(world: dict[str, Any], variant: str, side: str, n: int) -> None:
    call = _Wsgi()
    s = world["session"]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world['key']}"}
    post = {**auth, "CONTENT_TYPE": "application/json"}
    view = "/dsh/v1/sessions/{}" if side == "product" else "/bench/floor/session/{}"
    if variant in ("view", "304", "stale"):
        headers = dict(auth)
        if variant == "304":
            _expect(call("GET", view.format(s), auth), 200)
            headers["HTTP_IF_NONE_MATCH"] = call.headers["ETag"]
        status = 304 if variant == "304" else 200
        _seen([s])
        if variant == "stale":
            _seen(world["stale"], ago=timedelta(seconds=61))
            targets = [view.format(p) for p in world["stale"]]
        else:
            targets = [view.format(s)] * (n + 1)
        _expect(call("GET", targets[-1], headers), status)  # the warm-up
        for i in range(n):
            _expect(call("GET", targets[i], headers), status)
        return
    _seen([s])
    if variant == "candidates":
        body = json.dumps({"arguments": {"source_ref": world["source_ref"]}}).encode()
        path = (f"/dsh/v1/sessions/{s}/tools/arkme_group_member_candidates/execute" if side == "product"
                else f"/bench/floor/{s}/candidates")
    else:
        body = b'{"arguments": {}}'
        path = f"/dsh/v1/sessions/{s}/tools/arkme_context/execute" if side == "product" else f"/bench/floor/{s}/context"
    keyed = variant == "keyed"
    _expect(call("POST", path, {**post, **({"HTTP_IDEMPOTENCY_KEY": "warm"} if keyed else {})}, body), 200)
    for i in range(n):
        _expect(call("POST", path, {**post, **({"HTTP_IDEMPOTENCY_KEY": f"k{i:04d}"} if keyed else {})}, body), 200)


def _mcp_arm(world: dict[str, Any], variant: str, side: str, n: int) -> None:
    from .mcp_serving import request
    from .mcp_tools import ECHO, install

    if variant == "list":
        method, params, tool = "tools/list", {}, None
    else:
        method, params, tool = "tools/call", {"name": ECHO, "arguments": {"text": "hello"}}, ECHO
    if side == "product":
        install(MCP_TOOLS)
        call = _Wsgi()
        body, headers = request(method, params, world["key"], tool)
        environ = {"CONTENT_TYPE": headers.pop("Content-Type")}
        environ.update({"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()})
        path = f"/dsh/v1/sessions/{world['mcp_session']}/mcp"
        for _ in range(n + 1):  # the first is the warm-up
            status, content = call("POST", path, environ, body.encode())
            if status != 200 or b'"isError":true' in content or b'"error"' in content[:40]:
                raise RuntimeError(f"the product answered {status}: {content[:300]!r}")
        return
    _peer(method, params, tool, n)


def _peer(method: str, params: dict, tool: str | None, n: int) -> None:
    import asyncio

    from . import fastmcp_peer
    from .mcp_serving import request
    from .mcp_tools import write_definitions

    tools_file = Path(tempfile.mkdtemp(prefix="arkme-ir-peer-")) / "tools.json"
    write_definitions(MCP_TOOLS, str(tools_file))
    os.environ["ARKME_BENCH_TOOLS_FILE"] = str(tools_file)
    app = fastmcp_peer.peer().http_app(path="/mcp", stateless_http=True, json_response=True)
    body, headers = request(method, params, None, tool)
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    payload = body.encode()

    async def one() -> None:
        sent: list[dict] = []
        delivered = False

        async def receive() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": payload, "more_body": False}
            await asyncio.Event().wait()  # the client never disconnects
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
                 "headers": raw, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80)}
        await app(scope, receive, send)
        status = sent[0]["status"]
        content = b"".join(m.get("body", b"") for m in sent[1:])
        if status != 200 or b'"isError":true' in content or b'"error"' in content[:40]:
            raise RuntimeError(f"the peer answered {status}: {content[:300]!r}")

    async def main() -> None:
        async with app.router.lifespan_context(app):
            for _ in range(n + 1):  # the first is the warm-up
                await one()

    asyncio.run(main())


def _growth_arm(world: dict[str, Any], variant: str, size: str, n: int) -> None:
    from . import mcp_tools, tools_growth

    tools = int(size) * len(tools_growth.unit())
    if variant == "compile":
        registrars = [tools_growth.registrar(int(size)) for _ in range(COMPILE_N + 1)]  # the same whatever n
        if len(registrars[-1].toolset(mcp_tools.PROFILE, mcp_tools.PHASES).tools) != tools:  # the warm-up
            raise RuntimeError(f"the toolset compiled without {tools} tools")
        for i in range(n):
            registrars[i].toolset(mcp_tools.PROFILE, mcp_tools.PHASES)
        return
    import toolregistry.toolsets
    from toolregistry.api import views

    registrar = tools_growth.registrar(int(size))
    toolregistry.toolsets.registrar, views.CATALOG = registrar, registrar.catalog
    call = _Wsgi()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world['key']}"}
    path = f"/dsh/v1/sessions/{world['mcp_session']}" if variant == "view" else "/dsh/v1/catalog"
    _seen([world["mcp_session"]])
    status, content = call("GET", path, auth)
    if status != 200 or content.count(b'"name"') < tools:
        raise RuntimeError(f"{path} answered {status} without {tools} tools")
    for _ in range(n):
        _expect(call("GET", path, auth), 200)


def _add_arm(world: dict[str, Any], kind: str, side: str, n: int, store: Path) -> None:
    from arkme.accounts.models import Account
    from arkme.conversations.models import AgentSession, Message
    from galleries.services.gallery_add import gallery_confirm_add, gallery_prepare_add

    sets = world["adds"][kind]["sets"]
    order = [sets[-1], *sets[:n]]  # the warm-up's set first
    account = Account.objects.get(public_id=world["adds"][kind]["account"])
    for number, one in enumerate(order):
        # Looked up on both sides alike: the arm's, not the add's.
        session = AgentSession.objects.get(public_id=one["session"])

        def say_confirmed(session: Any = session, number: int = number) -> None:
            Message.objects.create(session=session, message_id=f"m{number}", text="确认")

        if side == "floor":
            from . import gallery_floors as floor
            from .gallery_books import Books

            store.mkdir(parents=True, exist_ok=True)
            floor.add([Path(one["folder"]) / f for f in one["files"]], store,
                      Books(account.pk, session.pk, one["extension"]), say_confirmed)
            continue
        op = gallery_prepare_add(account=account, session=session, extension=one["extension"],
                                 source={"source": "workspace", "workspace_paths": one["files"]}).public_id
        say_confirmed()
        gallery_confirm_add(account=account, session=session, extension=one["extension"], operation=op)


def _end_render_processes() -> None:
    """Let the SVG render processes this child started end and write their counts."""
    module = sys.modules.get("galleries.ingest.svg_render")
    for renderer in getattr(getattr(module, "_pool", None), "renderers", []):
        process = renderer.process
        if process is not None and process.poll() is None:
            process.stdin.close()
            process.wait(timeout=600)


def measure(folder: Path) -> None:
    """The counted program: Django set up once, then the plan's children (``instructions``)."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections
    from django.urls import resolve

    resolve("/dsh/v1/catalog")  # the URLconf and the product's views, imported once for all
    import galleries.ingest.svg_render as svg_render

    # Start-up and renders are slower under valgrind; the product's deadlines are not a figure.
    svg_render.START_TIMEOUT_SECONDS = 3600.0
    world = json.loads((folder / "world.json").read_text())
    children = json.loads((folder / "plan.json").read_text())
    database = Path(settings.DATABASES["default"]["NAME"])
    snapshot = folder / "snapshot.sqlite3"
    media, store = Path(settings.ARKME_MEDIA_ROOT), folder / "store"
    connections.close_all()

    def janitor() -> None:
        for suffix in ("-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(snapshot, database)
        shutil.rmtree(media, ignore_errors=True)
        shutil.rmtree(store, ignore_errors=True)
        media.mkdir(parents=True)

    def child(arm: str, n: int) -> None:
        family, variant, side = arm.split(":")
        if family == "web":
            _web_arm(world, variant, side, n)
        elif family == "mcp":
            _mcp_arm(world, variant, side, n)
        elif family == "grow":
            _growth_arm(world, variant, side, n)
        else:
            _add_arm(world, variant, side, n, store)
        _end_render_processes()
        connections.close_all()

    fork_children(children, child, janitor, folder / "counts")


# --- the figures, from the outside ------------------------------------------------------------


def arm_n(arm: str) -> int:
    family, variant, _ = arm.split(":")
    return {"web": WEB_N, "mcp": WEB_N, "grow": GROWTH_N.get(variant, WEB_N), "pc": SETS_N}[family]


def run(names: list[str], *, kinds: list[str] | None = None) -> list[Result]:
    """Count the named figures in one counted program; a Result per figure, in ``names``' order."""
    kinds = kinds if kinds is not None else list(small_kinds())
    figures = [FIGURES[name] if name != "ir_prepare_confirm" else prepare_confirm_figure(kinds) for name in names]
    arms = list(dict.fromkeys(arm for f in figures for _, ours, theirs in f.pairs for arm in (ours, theirs)))
    by_arm, failed, _ = count([(arm, arm_n(arm)) for arm in arms], kinds if "ir_prepare_confirm" in names else [])
    return [figure_result(f, by_arm, failed) for f in figures]


def count(measured: list[tuple[str, int]], adds: list[str]) -> tuple[dict[str, Counted], dict[str, str], list[Counted]]:
    """One counted program over ``measured`` (arm, n): each arm's count, the failed arms, and
    every measurement in order (an arm may be measured more than once)."""
    folder = Path(tempfile.mkdtemp(prefix="arkme-ir-"))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARKME_BENCH_DATABASE_URL")}
        env.update({"ARKME_BENCH_DIR": str(folder), "DATABASE_CONN_MAX_AGE": "600", "VIPS_CONCURRENCY": "1",
                    "ARKME_SVG_MEMORY_BYTES": str(64 * 2 ** 30), "ARKME_SVG_TIMEOUT_SECONDS": "3600"})
        env.pop("ARKME_BENCH_MCP_TOOLS", None)
        import subprocess

        subprocess.run([sys.executable, "-m", "bench.counted", "prepare", str(folder), json.dumps(adds)],
                       env=env, check=True)
        shutil.copyfile(folder / "bench.sqlite3", folder / "snapshot.sqlite3")
        write_plan(folder, plan(measured))
        counts = run_counted(folder / "counts", ["-m", "bench.counted", "measure", str(folder)],
                             counting_env(env))
        failed = failures(folder / "counts")
        every = collect(measured, counts)
    finally:
        if not os.environ.get("ARKME_IR_KEEP"):  # the counts and valgrind's logs, to look into
            shutil.rmtree(folder, ignore_errors=True)
    return {c.arm: c for c in every if c.arm not in failed}, failed, every


def stability() -> str:
    """The same counted program run twice, the session view counted twice in each: how far
    the same child's count and the same arm's cost lie apart."""
    arm = ("web:view:product", WEB_N)
    runs = [count([arm, arm], [])[2] for _ in range(2)]
    children = [c.counted for r in runs for c in r]
    costs = [c.per_iteration for r in runs for c in r]
    return (f"the same child counted {', '.join(f'{v:,}' for v in children)} instructions "
            f"({(max(children) - min(children)) / min(children):.3%} apart); its arm's cost an iteration "
            f"{', '.join(f'{v:,.0f}' for v in costs)} ({(max(costs) - min(costs)) / min(costs):.3%} apart)")


def figure_result(figure: Figure, by_arm: dict[str, Counted], failed: dict[str, str] | None = None) -> Result:
    detail: dict[str, object] = {}
    worst = 0.0
    failed = failed or {}
    broken = {arm: failed[arm] for _, ours, theirs in figure.pairs for arm in (ours, theirs) if arm in failed}
    if broken:  # a side that cannot run its path is a miss, never a ratio
        return Result(figure.name, None, figure.unit, figure.baseline, figure.goal_text, False,
                      {f"{arm} failed": why for arm, why in broken.items()})
    for label, ours, theirs in figure.pairs:
        a, b = by_arm[ours], by_arm[theirs]
        ratio = a.per_iteration / b.per_iteration / figure.per
        worst = max(worst, ratio)
        whole = f", ×{ratio * figure.per:.3f} in all" if figure.per != 1 else ""
        detail[label] = (f"×{ratio:.3f}{whole} ({a.per_iteration:,.0f} against {b.per_iteration:,.0f} instructions an "
                         f"iteration, {a.n} and {b.n} counted; brackets apart by {max(a.spread, b.spread):.3%})")
    return Result(figure.name, round(worst, 3), figure.unit, figure.baseline, figure.goal_text,
                  worst <= figure.goal, detail)


def _main() -> None:
    command, folder = sys.argv[1], Path(sys.argv[2] if len(sys.argv) > 2 else ".")
    if command == "prepare":
        os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
        import django

        django.setup()
        prepare(folder, json.loads(sys.argv[3]))
        from django.db import connections

        connections.close_all()
    elif command == "measure":
        measure(folder)
    elif command == "stability":
        print(stability())
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    _main()
