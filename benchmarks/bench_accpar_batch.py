"""Throughput of vectorised mapping evaluation on the AccPar formulation (VGG-19, 128 TPU-v2 +
128 TPU-v3: 8 bisection levels, 153 decisions). Target: >= 100,000 evaluations per second.

Prints, per batch size: the cost model's ``evaluate_batch`` alone, the same through the
search Evaluator (objectives, violation, best and history bookkeeping — what engines see), and
split over two local worker processes; then where the time goes (cProfile, by function).

    /work/venv/bin/python benchmarks/bench_accpar_batch.py [--quick]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path

import numpy as np

import optmap
from optmap.parallel import ParallelScorer
from optmap.search import Evaluator

PROBLEM = Path(__file__).resolve().parent.parent / "problems" / "accpar" / "hetero-vgg19.toml"
TARGET = 100_000


def rate(function, X: np.ndarray, seconds: float) -> float:
    """Evaluations per second: best of repeated calls for about ``seconds``."""
    function(X)  # warm up
    best, spent = np.inf, 0.0
    while spent < seconds:
        start = time.perf_counter()
        function(X)
        took = time.perf_counter() - start
        best, spent = min(best, took), spent + took
    return len(X) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings")
    args = parser.parse_args()
    seconds = 0.3 if args.quick else 1.5
    problem = optmap.load(PROBLEM)
    model = problem.cost_model
    space = model.space
    print(f"{problem.name}: {len(space)} decisions, {model.hierarchy.depth} levels, "
          f"{len(model.graph.names)} layers; numpy {np.__version__}")
    rng = np.random.default_rng(0)
    sizes = [1, 100, 1_000, 10_000, 100_000]
    header = f"{'batch':>8} {'evaluate_batch /s':>18} {'via Evaluator /s':>17} {'2 workers /s':>13}"
    print(header)
    print("-" * len(header))
    with ParallelScorer(model, workers=2) as pool:
        for n in sizes:
            X = space.sample(rng, n)
            evaluator = Evaluator(model, problem.objectives, problem.constraints)
            alone = rate(model.evaluate_batch, X, seconds)
            through = rate(evaluator.evaluate, X, seconds)
            pooled = rate(pool, X, seconds) if n >= 1_000 else float("nan")
            print(f"{n:>8,} {alone:>18,.0f} {through:>17,.0f} {pooled:>13,.0f}")
    X = space.sample(rng, 10_000)
    verdict = "meets" if rate(model.evaluate_batch, X, seconds) >= TARGET else "misses"
    print(f"\nlarge batches {verdict} the target of {TARGET:,} evaluations/s on one core")

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(10):
        model.evaluate_batch(X)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
    print("\nwhere the time goes (10 x 10,000 evaluations, by own time):")
    print("\n".join(line for line in text.getvalue().splitlines()[4:] if line.strip()))


if __name__ == "__main__":
    main()
