"""optmap.schedule: pipeline-schedule arithmetic, contiguous ranges and stage transfers.

Expected values are derived by hand from Narayanan et al., SC 2021 §2.2 (1F1B, interleaving),
Huang et al., GPipe (NeurIPS 2019) §2.3, and Korthikanti et al. 2022 §4.2.3, or by simulating
the pipeline step by step (a flow shop) in the test itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from optmap import schedule


def simulated_time(stage_times, microbatches: int) -> float:
    """Makespan of ``m`` micro-batches through stages in order, each stage one at a time:
    micro-batch i leaves stage s at max(it left stage s − 1, stage s finished micro-batch i − 1)
    + t_s. Forward and backward of a stage folded into t_s, as the schedule module does."""
    done = np.zeros(len(stage_times))
    for _ in range(microbatches):
        ready = 0.0
        for s, t in enumerate(stage_times):
            done[s] = max(ready, done[s]) + t
            ready = done[s]
    return float(done[-1])


def test_equal_stages_take_m_plus_p_minus_1_stage_times():
    # Narayanan §2.2.1: p = 4 equal stages of t = 2 s, m = 8 micro-batches -> (m + p - 1) t = 11 * 2 = 22 s
    assert schedule.pipeline_time([2.0] * 4, 8) == pytest.approx(22.0)
    # the bubble is (p - 1) t = 6 s, a fraction (p - 1) / m = 3/8 of the ideal m t = 16 s
    assert schedule.bubble_time([2.0] * 4) == pytest.approx(6.0)
    assert schedule.bubble_fraction(4, 8) == pytest.approx(3 / 8)


def test_interleaving_divides_the_bubble_by_v():
    # Narayanan §2.2.2: v = 2 chunks per device -> bubble (p - 1) t / v = 3 * 2 / 2 = 3 s, total 16 + 3 = 19 s
    assert schedule.pipeline_time([2.0] * 4, 8, interleave=2) == pytest.approx(19.0)
    assert schedule.bubble_fraction(4, 8, 2) == pytest.approx(3 / 16)
    assert schedule.uniform_bubble_time(4, 2.0, 2) == pytest.approx(3.0)


@pytest.mark.parametrize("times, m", [([1.0, 3.0, 2.0], 4), ([0.5, 0.2, 0.9, 0.1], 7), ([2.0], 5), ([1.0, 1.0], 1)])
def test_unequal_stages_match_a_step_by_step_simulation(times, m):
    # GPipe §2.3: the slowest stage sets the steady state; every stage is crossed once in the fill
    # and drain. [1, 3, 2] with m = 4 by hand: stage 2 finishes at 6, 9, 12, 15 -> 15 = 4 * 3 + (6 - 3)
    assert schedule.pipeline_time(times, m) == pytest.approx(simulated_time(times, m))
    assert schedule.period(times) == pytest.approx(max(times))
    assert schedule.pass_time(times) == pytest.approx(simulated_time(times, 1))


def test_a_population_is_scored_at_once():
    stages = np.array([[1.0, 3.0, 2.0], [2.0, 2.0, 2.0]])
    assert schedule.pipeline_time(stages, np.array([4, 8])) == pytest.approx([15.0, 20.0])
    # (p − 1) t / v for each row equals the general bubble of p copies of t
    p, t, v = np.array([1, 2, 8]), np.array([0.3, 1.0, 0.25]), np.array([1, 1, 4])
    expected = [schedule.bubble_time(np.full(pi, ti), vi) for pi, ti, vi in zip(p, t, v)]
    assert schedule.uniform_bubble_time(p, t, v) == pytest.approx(expected)


def test_in_flight_micro_batches():
    # Narayanan §2.2.1: with 1F1B stage s (0-based) of p = 4 keeps p - s micro-batches, at most m
    assert schedule.in_flight(4, 8, np.arange(4)).tolist() == [4, 3, 2, 1]
    assert float(schedule.in_flight(4, 2, 0)) == 2
    # GPipe §2.3 keeps every micro-batch's activations until the backward pass
    assert float(schedule.in_flight(4, 8, 3, "gpipe")) == 8
    # Korthikanti §4.2.3: p = 4, v = 2 -> p (1 + (p - 1)/(p v)) = 4 * (1 + 3/8) = 5.5 micro-batches
    assert float(schedule.interleaved_in_flight(4, 2)) == pytest.approx(5.5)
    # Megatron-LM's interleaved schedule by hand, p = 4, v = 2: stage s warms up 2(p - 1 - s) + (v - 1)p
    # chunk micro-batches and holds one more: 11, 9, 7, 5 chunks of its 2 = 5.5, 4.5, 3.5, 2.5 micro-batches
    assert schedule.interleaved_in_flight(4, 2, 8, np.arange(4)).tolist() == [5.5, 4.5, 3.5, 2.5]
    # with m = p = 4 micro-batches the first stage holds all of them (m·v = 8 chunks), not 5.5
    assert float(schedule.interleaved_in_flight(4, 2, 4)) == 4.0
    with pytest.raises(ValueError, match="schedule must be one of"):
        schedule.in_flight(4, 8, 0, "pipedream")


def test_contiguous_ranges_from_cut_points():
    # 5 items, cuts before items 2 and 3: stages [0, 1], [2], [3, 4]
    bounds = schedule.stage_bounds([2, 3], 5)
    assert bounds.tolist() == [0, 2, 3, 5]
    assert schedule.stage_ranges(bounds) == ((0, 1), (2, 2), (3, 4))
    assert schedule.stage_of(bounds).tolist() == [0, 0, 1, 2, 2]
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    prefix = schedule.prefix_sums(values)
    assert prefix.tolist() == [0, 1, 3, 6, 10, 15]
    # per-stage sums by hand: 1 + 2, 3, 4 + 5
    population = schedule.stage_bounds(np.array([[2, 3], [1, 4]]), 5)
    assert schedule.stage_sums(prefix, population).tolist() == [[3, 3, 9], [1, 9, 5]]


def test_stage_transfers_follow_the_placement():
    # 1 MB over 1 GB/s with 1 µs latency: 1e6 / 1e9 + 1e-6 s (one message), + 2 µs for two
    assert schedule.transfer_time(1e6, 1e9, 1e-6) == pytest.approx(1.001e-3)
    assert schedule.transfer_time(1e6, 1e9, 1e-6, messages=2) == pytest.approx(1.002e-3)
    bandwidth = np.array([[np.inf, 1e9, 2e9], [1e9, np.inf, 4e9], [2e9, 4e9, np.inf]])
    latency = np.array([[0.0, 1e-6, 2e-6], [1e-6, 0.0, 3e-6], [2e-6, 3e-6, 0.0]])
    nbytes = np.array([[4e6, 8e6], [4e6, 8e6]])
    placement = np.array([[0, 1, 2], [2, 0, 1]])  # row 0: 0 -> 1 -> 2; row 1: 2 -> 0 -> 1
    got = schedule.stage_transfers(nbytes, placement, bandwidth, latency)
    assert got == pytest.approx(np.array([[4e6 / 1e9 + 1e-6, 8e6 / 4e9 + 3e-6], [4e6 / 2e9 + 2e-6, 8e6 / 1e9 + 1e-6]]))


def test_increasing_cuts_sorts_spreads_and_leaves_room():
    from optmap.schedule import increasing_cuts

    # by hand: [3, 3, 1] in [1, 5] sorts to [1, 3, 3], the equal pair spread to 3, 4
    assert increasing_cuts([[3, 3, 1]], 1, 5).tolist() == [[1, 3, 4]]
    # [5, 5, 5] in [1, 5]: the last cut at most 5, the ones before it 4 and 3
    assert increasing_cuts([[5, 5, 5]], 1, 5).tolist() == [[3, 4, 5]]
    assert increasing_cuts([[0.4, 2.6]], 1, 4).tolist() == [[1, 3]]  # rounded first
