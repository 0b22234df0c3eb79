"""MARS benchmark: a full two-level search of ResNet101 with the default budget (target: under 60 s).

Not a test; prints figures. ``python benchmarks/bench_mars.py [--quick]``.

1. ``mars`` on ``problems/mars/resnet101.toml`` (32 × 30 level 1, 32 × 20 level 2, seed 0): wall
   and CPU time, level-1 evaluations per second, level-2 sub-problems solved, cache hits and hit
   rate, level-2 strategy rows scored per second, the latency found.
2. ``evaluate_batch`` throughput (whole mappings per second, the rate generic engines see) on
   ResNet101, random canonical vectors.
3. The level-2 GA against the exact DP on random sub-problems of ResNet101 (set class, design,
   layer range drawn at random): gap distribution and time per sub-problem of each.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import optmap
from optmap.plugins.mars import level2
from optmap.run import solve

ROOT = Path(__file__).resolve().parents[1]


def full_search(quick: bool) -> None:
    problem = optmap.load(ROOT / "problems/mars/resnet101.toml")
    options = {"gens1": 5} if quick else {}
    wall, cpu = time.perf_counter(), time.process_time()
    result = solve(problem, "mars", seed=0, options=options)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    extra = result.extra
    print(f"1. mars on ResNet101 ({len(problem.cost_model.layers)} mapped convolutions), "
          f"{'gens1 = 5 (quick)' if quick else 'default budget'}, seed 0")
    print(f"   wall {wall:.1f} s, CPU {cpu:.1f} s (target: under 60 s)")
    print(f"   level 1: {result.evaluations} evaluations, {result.evaluations / wall:.1f} evaluations/s")
    print(f"   level 2: {extra['level2_solved']} sub-problems solved, {extra['level2_cache_hits']} cache hits, "
          f"hit rate {extra['cache_hit_rate']:.1%}, {extra['level2_evaluations']:,} strategy rows scored "
          f"({extra['level2_evaluations'] / wall:,.0f} rows/s)")
    print(f"   latency {result.values['time'] * 1e3:.3f} ms (baseline {problem.cost_model.baseline_time * 1e3:.3f} ms)")


def batch_rate(quick: bool) -> None:
    model = optmap.load(ROOT / "problems/mars/resnet101.toml").cost_model
    X = model.space.sample(np.random.default_rng(0), 64 if quick else 256)
    model.evaluate_batch(X[:8])  # tables of the classes met
    start = time.perf_counter()
    model.evaluate_batch(X)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    model.space.repair(X)
    repair = time.perf_counter() - start
    print(f"2. evaluate_batch on ResNet101: {len(X) / seconds:,.0f} mappings/s; "
          f"canonical repair {len(X) / repair:,.0f} rows/s")


def ga_vs_dp(quick: bool) -> None:
    model = optmap.load(ROOT / "problems/mars/resnet101.toml").cost_model
    rng = np.random.default_rng(1)
    n, cases = len(model.layers), 10 if quick else 40
    gaps, t_ga, t_dp = [], 0.0, 0.0
    pairs = [c for c, devices in enumerate(model.candidates) if len(devices) in (2, 4)]
    for _ in range(cases):
        a, b = sorted(rng.choice(n, size=2, replace=False))
        sub = model.subproblem(int(rng.choice(pairs)), int(rng.integers(3)), int(a), int(b))
        start = time.perf_counter()
        best = level2.dp(sub).latency
        t_dp += time.perf_counter() - start
        start = time.perf_counter()
        ga = level2.ga(sub, pop=32, generations=20, seed=int(a)).latency
        t_ga += time.perf_counter() - start
        gaps.append(ga / best - 1)
    gaps = np.array(gaps)
    print(f"3. level-2 GA (32 × 20, seeded) vs exact DP on {cases} random ResNet101 sub-problems (sets of 2 and 4):")
    print(f"   gap mean {gaps.mean():.3%}, max {gaps.max():.3%}, below the DP: {(gaps < -1e-9).sum()}; "
          f"GA {t_ga / cases * 1e3:.0f} ms, DP {t_dp / cases * 1e3:.0f} ms per sub-problem")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budgets, for a smoke run")
    args = parser.parse_args()
    full_search(args.quick)
    batch_rate(args.quick)
    ga_vs_dp(args.quick)


if __name__ == "__main__":
    main()
