"""What the cost curves share: the marginal cost per item over a curve's top against its bottom.

A call that lists a user's extensions, or confirms an add of n images, does work per item
plus a fixed part. Its cost per item at the top of the curve against the bottom would mostly
show the fixed part spread thinner; what shows a curve growing badly (a statement per item,
a list walked once per item) is the cost one more item adds: over the upper half of the
curve against over its lower half (halves, not single steps, so that each is a difference
of times far apart, well above this machine's spread). Linear work reads about 1×; work quadratic in the items reads the
ratio of the segments' mean sizes (several times), so the goal of ≤ 2× says "grows no worse
than linearly", with room for this machine's timing spread on a difference of two medians.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

GOAL = 2.0


def marginal_ratio(cost: dict[int, float], bottom: tuple[int, int], top: tuple[int, int]) -> float:
    """The top segment's cost per added item over the bottom segment's."""
    def slope(segment: tuple[int, int]) -> float:
        low, high = segment
        return (cost[high] - cost[low]) / (high - low)

    return slope(top) / max(slope(bottom), 1e-12)


def curve_seconds(calls: dict[int, Callable[[], object]], sizes: Sequence[int], *, rounds: int, warmup: int = 2,
                  reset: Callable[[], object] | None = None) -> dict[int, float]:
    """Each size's median CPU time (this process's: the other programs on this shared machine
    are not counted, as wall time would count them) over ``rounds`` rounds, each round
    running every size once in turn, so that drift in the machine's speed falls on all sizes
    alike; ``reset``, untimed, runs after each call. Work in other processes (the database
    server, an SVG render process) is not counted: the curves run on SQLite, in-process."""
    times: dict[int, list[float]] = {size: [] for size in sizes}
    for round_ in range(warmup + rounds):
        for size in sizes:
            started = time.process_time()
            calls[size]()
            elapsed = time.process_time() - started
            if reset is not None:
                reset()
            if round_ >= warmup:
                times[size].append(elapsed)
    return {size: statistics.median(found) for size, found in times.items()}
