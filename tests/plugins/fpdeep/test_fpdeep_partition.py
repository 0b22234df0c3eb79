"""Cuts on the work line, exact stage times with K×K tiles, and the exact chain partition,
each checked against brute force on small cases."""

import functools
import itertools
import math

import numpy as np
import pytest

from optmap.plugins.fpdeep.layers import layer_table
from optmap.plugins.fpdeep.partition import (
    PERIOD_TOLERANCE, cut_grid, decode, encode, min_period_partition, stage_times,
)
from optmap.plugins.fpdeep.traffic import unit_traffic
from optmap.workload import WorkloadBuilder


def small_net():
    """conv 3->4 (3x3) and 4->6 (3x3) on 8x8, conv 6->2 (1x1), 4x4 pool, linear 8->3."""
    b = WorkloadBuilder("small", (3, 8, 8))
    x = b.conv2d("input", 4, 3, padding=1, name="c1")
    x = b.conv2d(x, 6, 3, padding=1, name="c2")
    x = b.maxpool2d(b.conv2d(x, 2, 1, name="c3"), 4, name="pool")
    b.linear(b.flatten(x, name="flat"), 3, name="fc")
    return layer_table(b.build(1))


TABLE = small_net()


def test_every_unit_boundary_round_trips_through_the_slots():
    rng = np.random.default_rng(0)
    grid = cut_grid(TABLE)
    for _ in range(200):
        splits = rng.integers(0, 2, len(TABLE))
        total = int(TABLE.units[np.arange(len(TABLE)), splits].sum())
        inner = np.sort(rng.integers(0, total + 1, 4))
        bounds = np.concatenate([[0], inner, [total]]).astype(float)
        part = decode(TABLE, encode(TABLE, bounds, splits, grid)[None], splits[None], grid)
        assert part.bounds[0].tolist() == bounds.tolist()
        assert part.chan[0].sum() == total  # every unit on exactly one device


def brute_stage(macs, kernel, phases, rate, budget):
    """Min over every tile assignment (>= 1 per portion) within budget of the slowest portion."""
    active = [i for i in range(len(macs)) if macs[i] > 0]
    if not active:
        return 0.0
    ranges = [range(1, int(budget // (phases[i] * kernel[i])) + 1) for i in active]
    best = math.inf
    for tiles in itertools.product(*ranges):
        if sum(phases[i] * kernel[i] * t for i, t in zip(active, tiles)) <= budget:
            best = min(best, max(macs[i] / (kernel[i] * rate * t) for i, t in zip(active, tiles)))
    return best


def test_stage_times_equal_brute_force_over_tile_counts():
    rng = np.random.default_rng(1)
    kernel, phases = TABLE.kernel, TABLE.phases
    macs = rng.integers(0, 4000, size=(30, 2, len(TABLE))).astype(float)
    macs[rng.random(macs.shape) < 0.4] = 0.0
    rate, budget = np.array([1.0, 2.0]), np.array([60.0, 90.0])
    got = stage_times(macs, TABLE, rate, budget)
    for m in range(len(macs)):
        for j in range(2):
            want = brute_stage(macs[m, j], kernel, phases, rate[j], budget[j])
            assert got[m, j] == pytest.approx(want, rel=1e-9) if math.isfinite(want) else got[m, j] == math.inf


def brute_partition(splits, devices, per_unit):
    """Min period over every placement of the cuts: compute, DRAM (FC bytes + 2 x BRAM overflow)
    and link times, each device's stage time by brute force over tile counts."""
    n = len(devices["rate"])
    traffic = unit_traffic(TABLE, splits)
    total = len(traffic) - 1
    rows = np.arange(len(TABLE))
    units = TABLE.units[rows, splits]
    starts = np.concatenate([[0], np.cumsum(units)])
    macs = TABLE.macs_per_unit[rows, splits]
    bram, fixed, dram = (per_unit[key][rows, splits] for key in ("bram", "bram_fixed", "dram"))
    stage = functools.lru_cache(maxsize=None)(lambda chan, j: brute_stage(
        np.array(chan) * macs, TABLE.kernel, TABLE.phases, devices["rate"][j], devices["budget"][j]))
    best = math.inf
    for inner in itertools.combinations_with_replacement(range(total + 1), n - 1):
        bounds = np.array([0, *inner, total], float)
        times = []
        for j in range(n):
            chan = np.clip(np.minimum(bounds[j + 1], starts[1:]) - np.maximum(bounds[j], starts[:-1]), 0, None)
            memory = (chan * bram + (chan > 0) * fixed).sum()
            times.append(stage(tuple(chan), j))
            times.append(((chan * dram).sum() + 2 * max(0.0, memory - devices["bram"][j])) / devices["dram_rate"][j])
            if j < n - 1:
                times.append(traffic[int(bounds[j + 1])] / devices["link_rate"][j])
        best = min(best, max(times))
    return best


# link 0.3 values/s makes the links bind (853 s against 768 s without); DRAM at 0.02 B/s makes the
# FC layer's DRAM time bind; 50 B of BRAM with DRAM at 0.1 B/s makes the overflow bind (1040 s)
@pytest.mark.parametrize("splits, link, dram, bram", [
    ((0, 0, 0, 0), np.inf, 50.0, np.inf), ((0, 0, 0, 0), 0.3, 50.0, np.inf), ((1, 0, 1, 1), 0.3, 0.02, np.inf),
    ((0, 1, 0, 0), np.inf, 0.1, 50.0)])
def test_min_period_partition_equals_brute_force(splits, link, dram, bram):
    n = 3
    devices = {"rate": np.array([1.0, 1.0, 2.0]), "budget": np.array([60.0, 60.0, 30.0]),
               "bram": np.full(n, bram), "dram_rate": np.full(n, dram), "link_rate": np.full(n, link)}
    per_unit = {"bram": np.full((len(TABLE), 2), 10.0), "bram_fixed": np.where(np.arange(2) == 1, 25.0, 0.0)[None].repeat(len(TABLE), 0),
                "dram": np.where(TABLE.fc[:, None], 3.0, 0.0).repeat(2, 1)}
    want = brute_partition(np.array(splits), devices, per_unit)
    traffic = unit_traffic(TABLE, splits)
    bounds, period = min_period_partition(TABLE, np.array(splits), devices, per_unit, traffic)
    assert want * (1 - 1e-12) <= period <= want * (1 + PERIOD_TOLERANCE)
    assert bounds[0] == 0 and bounds[-1] == len(traffic) - 1 and (np.diff(bounds) >= 0).all()
    assert min_period_partition(TABLE, np.array(splits), devices, per_unit, traffic, below=want * (1 - 1e-6)) is None
