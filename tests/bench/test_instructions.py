"""The instruction-count harness's parts: the Ir parser, the per-process tally, the plan of
children and the arithmetic of a counted arm. valgrind is not run here."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench.instructions import Counted, collect, interpreter, parse_ir, plan, totals

FIXTURE = Path(__file__).parent / "fixtures" / "cachegrind.out"


def test_the_parser_reads_the_total_ir():
    assert parse_ir(FIXTURE.read_text()) == 317_653_422


def test_the_parser_finds_ir_among_other_events():
    assert parse_ir("events: Ir Dr Dw\nfn=x\n1 2 3 4\nsummary: 10 20 30\n") == 10


@pytest.mark.parametrize("text", ["", "events: Dr\nsummary: 1\n", "events: Ir\n"])
def test_the_parser_refuses_what_is_not_a_count_of_ir(text):
    with pytest.raises(ValueError):
        parse_ir(text)


def _log(pid: int, parent: int) -> str:
    return f"==1== Cachegrind\n=={pid}== Command: python\n=={pid}== Parent PID: {parent}\n"


def test_a_process_counts_for_its_tagged_ancestor(tmp_path):
    text = FIXTURE.read_text()
    (tmp_path / "tags").mkdir()
    (tmp_path / "tags" / "20").write_text("m0-counted")
    for pid, parent in ((10, 1), (20, 10), (30, 20), (31, 30), (40, 10)):
        (tmp_path / f"valgrind.{pid}.log").write_text(_log(pid, parent))
        (tmp_path / f"cg.{pid}").write_text(text)
    # 20 is the child, 30 a process it started, 31 one that one started; 10 the parent, 40 a janitor.
    assert totals(tmp_path) == {"m0-counted": 3 * 317_653_422, "untagged": 2 * 317_653_422}


def test_each_arm_is_bracketed_by_two_uncounted_children():
    children = plan([("web:view:product", 20), ("web:view:floor", 20)])
    assert [(c["tag"], c["arm"], c["n"]) for c in children] == [
        ("m0-before", "web:view:product", 0), ("m0-counted", "web:view:product", 20),
        ("m0-after", "web:view:product", 0), ("m1-before", "web:view:floor", 0),
        ("m1-counted", "web:view:floor", 20), ("m1-after", "web:view:floor", 0)]


def test_an_arm_costs_its_counted_child_less_the_mean_of_its_brackets():
    counts = {"m0-before": 1_000_000, "m0-counted": 21_000_100, "m0-after": 1_000_200}
    (counted,) = collect([("a", 20)], counts)
    assert counted == Counted("a", 20, 21_000_100, 1_000_000, 1_000_200)
    assert counted.per_iteration == 1_000_000
    assert counted.spread == pytest.approx(200 / 20_000_000)


def test_the_interpreter_is_an_elf_binary_not_a_shim():
    assert Path(interpreter()).read_bytes()[:4] == b"\x7fELF"
