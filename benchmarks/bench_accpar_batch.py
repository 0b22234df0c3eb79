"""Throughput of vectorised AccPar scoring, ``evaluate_batch`` (issue 14, item 3).

- VGG-19 on 8 TPU-v3 (3 levels, 57 decisions): target >= 1,000,000 mappings/s;
- ResNet-50 on 512 TPU-v2 + 512 TPU-v3 (10 levels, 701 decisions): target >= 100,000/s;
- VGG-19 on 128 TPU-v2 + 128 TPU-v3 (problems/accpar/hetero-vgg19.toml) through the search
  Evaluator too (objectives, violation, archive: what engines see).

Random mappings, best of several calls, in mappings per CPU second (and per wall second).
``--profile`` adds where the time goes (cProfile, by own time).

    python benchmarks/bench_accpar_batch.py [--rows 20000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np
from timing import ROOT, accpar_problem, machine, verdict

import optmap
from optmap.search import Evaluator


def rates(function, X: np.ndarray, repeats: int = 5) -> tuple[float, float]:
    """Mappings per CPU second and per wall second: the best of ``repeats`` calls."""
    function(X[:100])
    cpu = wall = np.inf
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        function(X)
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return len(X) / cpu, len(X) / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="mappings per call (the ResNet case uses a fifth)")
    parser.add_argument("--profile", action="store_true", help="also print where the time goes")
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    hetero = accpar_problem("resnet50", [("tpu-v2", 512), ("tpu-v3", 512)]).cost_model
    cases = [("vgg19, 8 tpu-v3", accpar_problem("vgg19", [("tpu-v3", 8)]).cost_model, args.rows, 1e6),
             ("resnet50, 512 tpu-v2 + 512 tpu-v3", hetero, args.rows // 5, 1e5)]
    for label, model, rows, target in cases:
        cpu, wall = rates(model.evaluate_batch, model.space.sample(rng, rows))
        print(f"{label} ({model.hierarchy.depth} levels, {model.space.width} decisions): {cpu:,.0f} mappings per "
              f"CPU second ({wall:,.0f} per wall second); target >= {target:,.0f}: {verdict(cpu, target, False)}")
    loaded = optmap.load(ROOT / "problems" / "accpar" / "hetero-vgg19.toml")
    X = loaded.cost_model.space.sample(rng, args.rows)
    evaluator = Evaluator(loaded.cost_model, loaded.objectives, loaded.constraints)
    cpu, wall = rates(evaluator.evaluate, X)
    print(f"hetero-vgg19 (128 + 128, 8 levels) through the Evaluator: {cpu:,.0f} per CPU second ({wall:,.0f} wall)")
    if args.profile:
        for label, model, rows, _ in cases:
            X = model.space.sample(rng, rows)
            profiler = cProfile.Profile()
            profiler.runcall(model.evaluate_batch, X)
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(10)
            print(f"\n{label}, where the time goes (own time):")
            print("\n".join(line for line in text.getvalue().splitlines()[4:] if line.strip()))


if __name__ == "__main__":
    main()
