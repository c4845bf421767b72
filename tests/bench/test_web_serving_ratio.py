"""How ``web_serving`` turns its alternating windows into one ratio a path.

No timing is asserted here: the windows are made up, and the tests check the arithmetic
that the figure's goal is judged by.
"""
from __future__ import annotations

import pytest

from bench.mcp_serving import Window
from bench.web_serving import _per_request, paired_ratio


def window(cpu: float, requests: int = 1000, seconds: float = 3.0) -> Window:
    return Window(requests=requests, seconds=seconds, cpu=cpu, p50_ms=1.0, p99_ms=2.0)


def test_each_round_compares_its_own_pair_and_the_median_decides():
    # The machine slows down over the rounds; each product window costs 5% more than the
    # floor window of its round.
    floors = [window(1.0), window(1.5), window(2.0), window(1.2), window(0.9)]
    ours = [window(f.cpu * 1.05) for f in floors]
    median, low, high = paired_ratio(ours, floors, _per_request)
    assert median == pytest.approx(1.05)
    assert low == pytest.approx(1.05) and high == pytest.approx(1.05)


def test_one_burst_window_moves_the_range_not_the_median():
    floors = [window(1.0)] * 6
    ours = [window(1.02), window(1.04), window(1.6), window(1.03), window(1.01), window(1.05)]
    median, low, high = paired_ratio(ours, floors, _per_request)
    assert median == pytest.approx((1.03 + 1.04) / 2)  # an even count: the middle two
    assert low == pytest.approx(1.01) and high == pytest.approx(1.6)
    assert sum(w.cpu for w in ours) / sum(w.cpu for w in floors) > 1.1  # what pooling would have said


def test_a_path_that_costs_more_in_most_rounds_fails_however_its_best_round_reads():
    floors = [window(1.0)] * 5
    ours = [window(0.9), window(1.2), window(1.25), window(1.15), window(1.3)]
    median, low, _ = paired_ratio(ours, floors, _per_request)
    assert median == pytest.approx(1.2) and low == pytest.approx(0.9)


def test_requests_per_second_ratio_reads_each_side_per_request():
    bare = [window(1.0, requests=6000), window(1.0, requests=3000)]
    candidates = [window(1.0, requests=2400), window(1.0, requests=1200)]
    median, low, high = paired_ratio(bare, candidates, lambda w: w.seconds / w.requests)
    assert median == pytest.approx(0.4) and low == high


def test_rounds_must_pair_up():
    with pytest.raises(ValueError):
        paired_ratio([window(1.0)] * 3, [window(1.0)] * 2, _per_request)
