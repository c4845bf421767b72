"""Instruction counts under valgrind's cachegrind, for the in-process ratios that gate.

Timings on this shared machine move by ±15% run to run; the instructions a program executes
do not (the same program counts within about 0.03%), so a product-against-floor ratio that
gates is counted, not timed.

How a workload is counted, so that start-up and import cost cancel out: one interpreter runs
under ``valgrind --tool=cachegrind --cache-sim=no`` (the real binary, never a shell shim), sets
up Django once, and then forks one child per measurement. A forked child carries the
parent's counts, and cachegrind writes each process's total ``Ir`` to its own file (by pid; each child
names its tag in a file, and a process it starts counts for it), so:

- a child runs the arm's ``prepare`` (its reset and warm-up: the same work whatever ``n``)
  and then ``n`` iterations of the arm's ``step``, and exits;
- each counted child is bracketed by two children that run ``prepare`` and no step, one just
  before and one just after it; the arm's cost is the child's ``Ir`` less the mean of the
  two, over ``n``. The parent's own work between forks is the same fork and wait each time,
  so the mean of the two brackets is the counted child's base exactly, and the difference of
  the brackets is reported as the measurement's spread;
- between children a janitor child puts the database and the stored files back as the set-up
  left them (its own count is not used), so every child starts from the same state;
- Python processes a child starts (the SVG render process) run under cachegrind too
  (``--trace-children=yes``), and are summed into the child's count; system programs
  (the compiler, linker and ``ldconfig`` that ``ctypes.util.find_library`` runs, a shell)
  are not counted.

The server a figure talks to is in-process (SQLite): nothing counted runs in another
program. ``bench/counted.py`` holds the arms and the figures.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

_SUMMARY = re.compile(r"^(?:summary|totals):\s*(.*)$", re.MULTILINE)
_EVENTS = re.compile(r"^events:\s*(.*)$", re.MULTILINE)


def parse_ir(text: str) -> int:
    """The total ``Ir`` of one cachegrind output file (its ``events:`` and ``summary:`` lines)."""
    events = _EVENTS.search(text)
    summary = _SUMMARY.search(text)
    if events is None or summary is None:
        raise ValueError("not a cachegrind output file: no events or summary line")
    names, values = events.group(1).split(), summary.group(1).split()
    if "Ir" not in names:
        raise ValueError(f"the file counts {names}, not Ir")
    return int(values[names.index("Ir")])


_PARENT = re.compile(r"^==\d+== Parent PID: (\d+)$", re.MULTILINE)


def totals(folder: Path) -> dict[str, int]:
    """Ir summed per tag: each file ``cg.<pid>`` counts for the nearest process up its tree
    (valgrind's log ``valgrind.<pid>.log`` names each one's parent) that a file
    ``tags/<pid>`` names."""
    tags = {int(f.name): f.read_text() for f in (folder / "tags").iterdir()} if (folder / "tags").exists() else {}
    parents = {}
    for log in folder.glob("valgrind.*.log"):
        found = _PARENT.search(log.read_text(errors="replace"))
        if found:
            parents[int(log.name.split(".")[1])] = int(found.group(1))
    summed: dict[str, int] = defaultdict(int)
    for file in folder.glob("cg.*"):
        pid = int(file.name.split(".")[1])
        seen = pid
        while seen not in tags and seen in parents:
            seen = parents[seen]
        summed[tags.get(seen, "untagged")] += parse_ir(file.read_text(errors="replace"))
    return dict(summed)


def interpreter() -> str:
    """The real interpreter binary: a venv's ``python`` is a symlink to it, and valgrind must
    run the ELF program itself (under a shell shim it would count the shell)."""
    real = os.path.realpath(sys.executable)
    with open(real, "rb") as handle:
        if handle.read(4) != b"\x7fELF":
            raise RuntimeError(f"{real} is not an ELF binary (a shell shim?); valgrind cannot count it")
    return real


def valgrind_command(out_folder: Path, argv: list[str]) -> list[str]:
    # Programs the interpreter runs besides Python (the C compiler and ldconfig that
    # ctypes.util.find_library runs when cairo is loaded, at a warm-up) run uncounted: they
    # are no part of a request, and under valgrind they cost minutes.
    return ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
            "--trace-children-skip=*/gcc*,*/cc,*/*-gcc*,*/cc1,*/collect2,*/ld,*/ld.*,*/ldconfig*,*/objdump,*/sh,*/dash,*/bash",
            "--error-exitcode=0",
            f"--log-file={out_folder}/valgrind.%p.log", f"--cachegrind-out-file={out_folder}/cg.%p", interpreter(), *argv]


def counting_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a counted run: the venv's packages found by the real binary, a fixed
    hash seed (dicts and sets iterate the same way in every run), and ``extra``."""
    env = {**os.environ, "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.update(extra or {})
    return env


def run_counted(out_folder: Path, argv: list[str], env: dict[str, str]) -> dict[str, int]:
    """Run ``python argv`` under cachegrind; Ir per tag (valgrind's own logs beside the counts)."""
    if shutil.which("valgrind") is None:
        raise RuntimeError("needs valgrind (Debian package valgrind)")
    out_folder.mkdir(parents=True, exist_ok=True)
    completed = subprocess.run(valgrind_command(out_folder, argv), env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"the counted run failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
    return totals(out_folder)


@dataclass(frozen=True)
class Counted:
    """One arm's cost: ``n`` iterations counted against the two brackets around them."""

    arm: str
    n: int
    counted: int
    before: int
    after: int

    @property
    def per_iteration(self) -> float:
        return (self.counted - (self.before + self.after) / 2) / self.n

    @property
    def spread(self) -> float:
        """How far the two brackets lie apart, as a share of the counted difference."""
        return abs(self.after - self.before) / max(1.0, self.counted - (self.before + self.after) / 2)


def plan(arms: list[tuple[str, int]]) -> list[dict[str, object]]:
    """The children the parent forks, in order: for each arm a bracket, the counted child and
    a bracket, each after a janitor."""
    children: list[dict[str, object]] = []
    for index, (arm, n) in enumerate(arms):
        for role, count in (("before", 0), ("counted", n), ("after", 0)):
            children.append({"tag": f"m{index}-{role}", "arm": arm, "n": count})
    return children


def collect(arms: list[tuple[str, int]], counts: dict[str, int]) -> list[Counted]:
    return [Counted(arm, n, counts[f"m{i}-counted"], counts[f"m{i}-before"], counts[f"m{i}-after"])
            for i, (arm, n) in enumerate(arms)]


def failures(out_folder: Path) -> dict[str, str]:
    """The arms whose children failed, with the last line of each traceback."""
    folder = out_folder / "failed"
    if not folder.exists():
        return {}
    return {f.name.replace("_", ":", 2): (f.read_text().strip().splitlines() or [""])[-1] for f in folder.iterdir()}


def fork_children(children: list[dict[str, object]], run_child: Callable[[str, int], None],
                  janitor: Callable[[], None], out_folder: Path) -> None:
    """In the counted parent: each child in its own forked process, a janitor before each.
    ``run_child(arm, n)`` runs in the child; a failing child's arm is named in
    ``out_folder/failed/<arm>`` with its traceback, and the run goes on. Each child names
    its tag in ``out_folder/tags/<pid>`` (the same small write in every child)."""
    (out_folder / "tags").mkdir(parents=True, exist_ok=True)
    for child in children:
        for job, tag in ((janitor, "janitor"), (lambda c=child: run_child(str(c["arm"]), int(c["n"])), child["tag"])):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    (out_folder / "tags" / str(os.getpid())).write_text(str(tag))
                    job()
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    failed = out_folder / "failed"
                    failed.mkdir(exist_ok=True)
                    (failed / str(child["arm"]).replace(":", "_")).write_text(traceback.format_exc())
                    code = 1
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            os.waitpid(pid, 0)


def write_plan(folder: Path, children: list[dict[str, object]]) -> Path:
    file = folder / "plan.json"
    file.write_text(json.dumps(children))
    return file
