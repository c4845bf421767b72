"""Run the benchmarks: ``python -m bench [--json] [--only NAME ...] [--ci]``.

The PostgreSQL figures run when ``DATABASE_URL`` names a PostgreSQL server: a fresh database
is made beside it for the run and dropped after. Without one they are skipped with a reason.
The ``ir_`` figures are counted in instructions under valgrind (``bench/counted.py``), all in
one counted program. The last line is the verdict (``bench/verdict.py``); the exit code is
non-zero when any figure missed its goal. ``--ci`` runs the quick gated subset (``CI``).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
from urllib.parse import urlsplit, urlunsplit

from .verdict import verdict

COUNTED = "bench.counted"
ORDER = [
    ("tools_growth", "bench.tools_growth", False),
    ("prepare_confirm", "bench.prepare_confirm", False),
    ("svg_normalise", "bench.svg_normalise", False),
    ("libvips_peer", "bench.libvips_peer", False),
    ("candidates_growth", "bench.candidates_growth", True),
    ("sessions_growth", "bench.sessions_growth", True),
    ("audit_growth", "bench.audit_growth", True),
    ("peak_memory", "bench.peak_memory", False),
    ("extensions_growth", "bench.extensions_growth", False),
    ("confirm_growth", "bench.confirm_growth", False),
    ("web_serving", "bench.web_serving", True),
    ("mcp_tools_list", "bench.mcp_tools_list", False),
    ("mcp_call", "bench.mcp_call", False),
    *((name, COUNTED, False) for name in (
        "ir_session_view", "ir_session_304", "ir_session_stale", "ir_arkme_context", "ir_keyed_execute",
        "ir_candidates", "ir_mcp_tools_call", "ir_mcp_tools_list", "ir_tools_growth", "ir_prepare_confirm")),
]
# The quick gated subset CI runs: every instruction-counted figure, on small inputs (a few
# minutes under valgrind; nothing in it is timed, so a loaded CI machine cannot fail it).
CI = [name for name, module, _ in ORDER if module == COUNTED]
GOALS = {
    "candidates_growth": ("itself at a tenth of the chats", "≤ 2× time at 10× in every cell, ≤ 2 queries"),
    "sessions_growth": ("itself at 10k sessions", "≤ 1.5× per session at 1M, ≥ 95% of touches heap-only"),
    "audit_growth": ("the same page at the smallest size where it is full", "≤ 1.5× at 10M on every page"),
    "web_serving": ("its floor view in the same server (raw SQL, the same writes); candidates also the bare view",
                    "≤ 1.1× its floor's CPU/request on every path; candidates ≥ 0.5× the bare view's req/s"),
}


def _postgres_url() -> str | None:
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else None


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_with_database(url, "postgres"), autocommit=True) as connection:
        connection.execute(sql)


def _run_on_postgres(name: str, url: str) -> dict:
    database = f"arkme_bench_{os.getpid()}"
    _admin(url, f"DROP DATABASE IF EXISTS {database}")
    _admin(url, f"CREATE DATABASE {database}")
    try:
        env = {**os.environ, "ARKME_BENCH_DATABASE_URL": _with_database(url, database)}
        out = subprocess.run([sys.executable, "-m", "bench", "--inner", name], env=env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    finally:
        _admin(url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _run_here(module: str) -> dict:
    from .common import setup_django

    setup_django()
    return importlib.import_module(module).run().as_dict()


def _counted(names: list[str], *, quick: bool = False) -> list[dict]:
    """The instruction-counted figures, in one counted program; skipped without valgrind.
    ``quick``: ``prepare_confirm`` on one kind per path (``CI_KINDS``)."""
    from .counted import CI_KINDS, FIGURES, run

    if shutil.which("valgrind") is None:
        return [{"name": name, "value": None, "unit": "", "goal": FIGURES[name].goal_text if name in FIGURES
                 else "≤ 1.2× on every kind", "baseline": "instructions under cachegrind", "met": None,
                 "skipped": "needs valgrind (Debian package valgrind)"} for name in names]
    return [result.as_dict() for result in run(names, kinds=CI_KINDS if quick else None)]


def _failed(name: str, error: BaseException) -> dict:
    """A figure that could not be measured is a miss, with its reason."""
    return {"name": name, "value": None, "unit": "", "baseline": "", "goal": "", "met": False,
            "detail": {"failed": f"{type(error).__name__}: {error}"[-2000:]}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--json", action="store_true", help="print one JSON list")
    parser.add_argument("--only", nargs="*", help="names of the benchmarks to run")
    parser.add_argument("--ci", action="store_true",
                        help="the quick gated subset (prepare_confirm on one kind per path): " + ", ".join(CI))
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    modules = {name: module for name, module, _ in ORDER}
    if options.inner:
        print(json.dumps(_run_here(modules[options.inner])))
        return 0
    unknown = sorted(set(options.only or ()) - set(modules))
    if unknown:
        parser.error(f"unknown figure {', '.join(unknown)}; the figures: {', '.join(modules)}")
    wanted = set(options.only or ()) | (set(CI) if options.ci else set())
    selected = [(name, module, pg) for name, module, pg in ORDER if not wanted or name in wanted]
    postgres = _postgres_url()
    results = []
    counted = [name for name, module, _ in selected if module == COUNTED]
    for name, module, needs_postgres in selected:
        if module == COUNTED:
            if name == counted[0]:
                try:
                    results.extend(_counted(counted, quick=options.ci))
                except Exception as error:  # reported as a miss; the run goes on
                    results.extend(_failed(n, error) for n in counted)
                if not options.json:
                    print(f"  ran {', '.join(counted)}", file=sys.stderr, flush=True)
            continue
        if needs_postgres:
            if postgres is None:
                baseline, goal = GOALS[name]
                results.append({"name": name, "value": None, "unit": "", "baseline": baseline, "goal": goal,
                                "met": None, "skipped": "needs PostgreSQL: set DATABASE_URL=postgres://…"})
                continue
            try:
                results.append(_run_on_postgres(name, postgres))
            except Exception as error:  # reported as a miss; the run goes on
                results.append(_failed(name, error))
        else:
            try:
                results.append(_run_here(module))
            except Exception as error:  # reported as a miss; the run goes on
                results.append(_failed(name, error))
        if not options.json:
            print(f"  ran {name}", file=sys.stderr, flush=True)
    code, line = verdict(results)
    if options.json:
        print(json.dumps(results, ensure_ascii=False))
        print(line, file=sys.stderr)
        return code
    print(f"{'name':<22} {'value':>10}  {'unit':<36} {'goal':<32} {'met'}")
    for result in results:
        value = "—" if result["value"] is None else f"{result['value']:g}"
        met = "skipped: " + result["skipped"] if result.get("skipped") else ("yes" if result["met"] else "NO")
        print(f"{result['name']:<22} {value:>10}  {result['unit']:<36} {result['goal']:<32} {met}")
        print(f"{'':<24}against: {result['baseline']}")
        for key, detail in (result.get("detail") or {}).items():
            print(f"{'':<24}{key}: {detail}")
    print(line)
    return code


if __name__ == "__main__":
    sys.exit(main())
