"""The tools-growth figures compare like with like: every size is the same shipped tools
repeated whole, so a ratio between sizes is growth and not a change of mix, and the ratio is
read per tool (linear reads 1.0). No timing or counting is asserted here."""
from __future__ import annotations

from collections import Counter

import pytest

from bench import counted, mcp_tools, tools_growth
from bench.instructions import Counted


@pytest.mark.parametrize("units", tools_growth.UNITS)
def test_every_size_is_the_shipped_tools_repeated_whole(units):
    shipped = {module.METADATA.name: module for module in tools_growth.unit()}
    copies = tools_growth.modules(units)
    names = [module.METADATA.name for module in copies]
    assert len(set(names)) == len(names) == units * len(shipped)
    assert Counter(name.rsplit("_", 1)[0] for name in names) == {name: units for name in shipped}
    for copy in copies:
        original = shipped[copy.METADATA.name.rsplit("_", 1)[0]]
        assert copy.definition().input_schema == original.definition().input_schema
        assert copy.METADATA.profiles == original.METADATA.profiles and copy.METADATA.phase == original.METADATA.phase
    toolset = tools_growth.registrar(units).toolset(mcp_tools.PROFILE, mcp_tools.PHASES)
    assert [tool.metadata.name for tool in toolset.tools] == names


def test_the_counted_figure_names_the_sizes_it_measures():
    assert counted.SHIPPED_TOOLS == len(tools_growth.unit())
    assert counted.GROWTH_TOOLS == (tools_growth.UNITS[0] * counted.SHIPPED_TOOLS,
                                    tools_growth.UNITS[-1] * counted.SHIPPED_TOOLS)
    figure = counted.FIGURES["ir_tools_growth"]
    assert [arm for _, ours, theirs in figure.pairs for arm in (ours, theirs)] == [
        f"grow:{variant}:{units}" for variant in ("compile", "view", "catalog")
        for units in (tools_growth.UNITS[-1], tools_growth.UNITS[0])]
    assert figure.goal_text == "≤ 1× per tool (linear) on every path"


def _growth(compile_large: int) -> dict[str, Counted]:
    """Fake counts: every arm costs a million an iteration at one unit."""
    small, large = tools_growth.UNITS[0], tools_growth.UNITS[-1]
    by_arm = {f"grow:{variant}:{units}": Counted(f"grow:{variant}:{units}", 5, 5_000_000, 0, 0)
              for variant in ("compile", "view", "catalog") for units in (small, large)}
    by_arm[f"grow:compile:{large}"] = Counted(f"grow:compile:{large}", 5, 5 * compile_large, 0, 0)
    return by_arm


def test_a_growth_ratio_is_read_per_tool():
    figure = counted.FIGURES["ir_tools_growth"]
    times = tools_growth.UNITS[-1] // tools_growth.UNITS[0]
    linear = counted.figure_result(figure, _growth(times * 1_000_000))
    assert linear.value == 1.0 and linear.met
    worse = counted.figure_result(figure, _growth(times * 1_010_000))
    assert worse.value == 1.01 and not worse.met
    assert tools_growth.per_tool(times * 2.0, 2.0) == 1.0
