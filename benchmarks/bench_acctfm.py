"""AccTFM benchmarks: evaluator throughput, DP speed and state counts, Alg. 1 vs exact, engine quality.

Not a test; prints figures. ``python benchmarks/bench_acctfm.py [--quick]``.

1. ``evaluate_batch`` throughput on TF8 (62 decisions) for several population sizes.
2. Faithful Algorithm 1 vs the exact non-dominated-state DP on the TF models and GPT-2 large
   (72 blocks): wall time and states kept.
3. How often, and by how much, faithful Alg. 1 misses the optimum on random instances
   (per-micro-batch tables with launch overhead and an α term, as in the note §2.5).
4. Generic engines (random, ga, optuna when installed) against the exact optimum on TF8 under a
   fixed evaluation budget.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import optmap
from optmap.errors import OptmapError
from optmap.plugins.acctfm import schedule
from optmap.run import solve
from optmap.search import Budget

ROOT = Path(__file__).resolve().parents[1]
K = np.array(schedule.PS, float)


def throughput(quick: bool) -> None:
    model = optmap.load(ROOT / "problems/acctfm/tf8.toml").cost_model
    rng = np.random.default_rng(0)
    print("1. evaluate_batch on TF8 (62 decisions)")
    for n in (1, 1024, 16384 if not quick else 4096):
        X = model.space.sample(rng, n)
        model.evaluate_batch(X)  # warm the table cache
        start, repeats = time.perf_counter(), 0
        while time.perf_counter() - start < (0.2 if quick else 1.0):
            model.evaluate_batch(X)
            repeats += 1
        seconds = (time.perf_counter() - start) / repeats
        print(f"   {n:6d} rows: {seconds * 1e3:8.2f} ms per call, {n / seconds:12,.0f} rows/s")


def dp_speed() -> None:
    print("2. DP per direction (uncompressed tables): faithful Alg. 1 vs exact")
    for name, overrides in [("tf8", []), ("tf16", []), ("tf32", []), ("tf64", []),
                            ("tf8", ["workload.preset=\"gpt2-large\"", "workload.seq_len=1024", "workload.batch=16"])]:
        problem = optmap.load(ROOT / f"problems/acctfm/{name}.toml", overrides)
        model = problem.cost_model
        tab = model.tables()
        row = [f"   {problem.workload.config.name:8s} L={model.L:3d}"]
        for method in ("faithful", "exact"):
            start = time.perf_counter()
            result = (schedule.alg1 if method == "faithful" else schedule.exact_dp)(tab.tcp_bwd[::-1], tab.tcm_bwd[::-1])
            row.append(f"{method} {1e3 * (time.perf_counter() - start):7.2f} ms makespan {result.makespan:.5f}"
                       + (f" ({result.n_states} states)" if method == "exact" else ""))
        print("  ".join(row))


def faithful_gap(quick: bool) -> None:
    rng = np.random.default_rng(1)
    trials = 500 if quick else 3000
    gaps, sizes = [], []
    for _ in range(trials):
        L = int(rng.integers(2, 31))
        C, M = rng.uniform(0.2, 5, L), rng.uniform(0.2, 5, L)
        e, a = rng.uniform(0, 0.3), rng.uniform(0, 0.5)
        tcp, tcm = C[:, None] / K + e, a + M[:, None] / K  # note §2.5 instance family
        ex, fa = schedule.exact_dp(tcp, tcm), schedule.alg1(tcp, tcm)
        gaps.append(fa.makespan / ex.makespan - 1)
        sizes.append(L)
    gaps = np.array(gaps)
    print(f"3. faithful Alg. 1 vs exact on {trials} random chains (L = 2..30): suboptimal in "
          f"{(gaps > 1e-9).sum()} ({(gaps > 1e-9).mean():.1%}), mean gap {gaps.mean():.3%}, worst {gaps.max():.2%}")


def engines(quick: bool) -> None:
    problem = optmap.load(ROOT / "problems/acctfm/tf8.toml")
    best = solve(problem, "acctfm").values["time"]
    budget = Budget(evaluations=2000 if quick else 20000)
    print(f"4. TF8, {budget.evaluations} evaluations, gap to the exact optimum {best:.4f} s")
    for engine in ("random", "ga", "optuna"):
        try:
            start = time.perf_counter()
            result = solve(problem, engine, seed=0, budget=budget)
        except OptmapError as exc:
            print(f"   {engine:8s} skipped: {exc}")
            continue
        print(f"   {engine:8s} {result.values['time']:.4f} s  gap {result.values['time'] / best - 1:7.3%}  "
              f"{time.perf_counter() - start:6.2f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and budgets")
    args = parser.parse_args()
    throughput(args.quick)
    dp_speed()
    faithful_gap(args.quick)
    engines(args.quick)


if __name__ == "__main__":
    main()
