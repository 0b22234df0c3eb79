"""Throughput of vectorised AccPar scoring, ``evaluate_batch`` (issue 14, item 3).

- VGG-19 on 8 TPU-v3 (3 levels, 57 decisions): target >= 1,000,000 mappings/s;
- ResNet-50 on 512 TPU-v2 + 512 TPU-v3 (10 levels, 701 decisions): target >= 100,000/s;
- VGG-19 on 128 TPU-v2 + 128 TPU-v3 (problems/accpar/hetero-vgg19.toml) through the search
  Evaluator too (objectives, violation, archive: what engines see).

Random mappings, best of several calls, in mappings per CPU second (and per wall second), through
the compiled kernel (batches of ``KERNEL_ROWS`` or more) and, beside it, through numpy. Then what
the kernel costs a process: importing numba, and its first call, compiling (a fresh numba cache,
as after an install) or loading the compiled code from the cache.
``--profile`` adds where the time goes (cProfile, by own time).

    python benchmarks/bench_accpar_batch.py [--rows 20000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time

import numpy as np
from timing import ROOT, accpar_problem, machine, verdict

import optmap
import optmap.plugins.accpar.model as accpar_model
from optmap.search import Evaluator

FIRST_CALL = (  # a fresh process: CPU seconds to import numba, then of the kernel's first call
    "import time, numpy as np; from timing import accpar_problem\n"
    "model = accpar_problem('vgg19', [('tpu-v3', 8)]).cost_model\n"
    "X = model.space.sample(np.random.default_rng(0), 512)\n"
    "start = time.process_time(); import numba; imported = time.process_time() - start\n"
    "start = time.process_time(); model.evaluate_batch(X); print(imported, time.process_time() - start)\n")


def rates(function, X: np.ndarray, repeats: int = 15) -> tuple[float, float]:
    """Mappings per CPU second and per wall second: the best of ``repeats`` calls (a shared machine
    slows some calls by a third or more)."""
    function(X[:1000])  # a batch the kernel takes: numba imported and the kernel loaded before timing
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
        X = model.space.sample(rng, rows)
        cpu, wall = rates(model.evaluate_batch, X)
        accpar_model.KERNEL_ROWS, kernel_rows = len(X) + 1, accpar_model.KERNEL_ROWS
        numpy_cpu, _ = rates(model.evaluate_batch, X)
        accpar_model.KERNEL_ROWS = kernel_rows
        print(f"{label} ({model.hierarchy.depth} levels, {model.space.width} decisions): {cpu:,.0f} mappings per "
              f"CPU second ({wall:,.0f} per wall second; numpy path {numpy_cpu:,.0f}); target >= {target:,.0f}: "
              f"{verdict(cpu, target, False)}")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        first = [subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, check=True, env=env,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.split() for _ in range(2)]
    print(f"a process that scores {accpar_model.KERNEL_ROWS}+ plans at once pays: import numba "
          f"{float(first[1][0]):.2f} s CPU, then the kernel's first call {float(first[1][1]):.2f} s (loading numba's "
          f"cache), or {float(first[0][1]):.2f} s on the first run after an install (compiling)")
    loaded = optmap.load(ROOT / "problems" / "accpar" / "hetero-vgg19.toml")
    X = loaded.cost_model.space.sample(rng, args.rows)
    evaluator = Evaluator(loaded.cost_model, loaded.objectives, loaded.constraints)
    cpu, wall = rates(evaluator.evaluate, X)
    print(f"hetero-vgg19 (128 + 128, 8 levels) through the Evaluator: {cpu:,.0f} per CPU second ({wall:,.0f} wall)")
    runs = [optmap.solve(loaded, "random", seed=seed) for seed in range(5)]  # the file's 20,000 evaluations
    whole = max(run.evaluations / run.seconds for run in runs)  # best of five, like the rates above
    print(f"the random engine's whole run on it ({runs[0].evaluations:,} evaluations, batches of 1,024, the "
          f"kernel loaded off the clock): {whole:,.0f} per wall second, {wall / whole:.1f}x below the Evaluator's rate")
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
