"""DeepSpatialMatrix speed: whole `optmap run` wall time, engine time and candidates scored per second.

Usage::

    python benchmarks/bench_dsm.py            # VGG16, ResNet50, GNMT training at N_mb = 512
    python benchmarks/bench_dsm.py --repeat 3

Targets (issue 17): exploring VGG16 training (all layers, passes and optimisations) with the dsm
engine takes under 10 s for the whole `optmap run`, GNMT under 60 s, on a 2-core machine. Each
problem is run once through the command line (interpreter start, plugin loading, problem build,
search, report) and ``--repeat`` times in-process for the engine's own time and candidates/s; the
generic scorer's rows/s (what ga, optuna and random see) is measured on 2,048 random mappings.
The whole run's CPU seconds are printed beside its wall time: on a shared machine the wall time
also counts waiting for a core.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from optmap.problem import load
from optmap.search import Evaluator

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"vgg16-train": 10.0, "resnet50-train": None, "gnmt-train": 60.0}  # seconds for the whole `optmap run`


def cli_seconds(problem: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one whole `optmap run`."""
    optmap = Path(sys.executable).with_name("optmap")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(optmap), "run", str(problem), "--quiet", "--json", os.devnull],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def engine_run(problem) -> tuple[float, float, int]:
    from optmap.plugins.dsm import tables
    from optmap.plugins.dsm.engine import DSMSearch

    tables._SHARED.clear()  # score everything afresh (a process reuses tables across searches)
    evaluator = Evaluator(problem.cost_model, ["time"])
    start, cpu = time.perf_counter(), time.process_time()
    extra = DSMSearch().search(evaluator, 0)
    return time.perf_counter() - start, time.process_time() - cpu, extra["candidates_scored"]


def scorer_rows_per_second(problem, rows: int = 2048) -> float:
    model = problem.cost_model
    X = model.space.sample(np.random.default_rng(0), rows)
    start = time.perf_counter()
    model.evaluate_batch(X)
    return rows / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    load1 = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load1:.1f} (other processes share them)")
    print(f"{'problem':16} {'optmap run s':>13} {'run cpu s':>10} {'target s':>9} {'engine s':>9} {'engine cpu s':>13} "
          f"{'candidates':>12} {'cand/s (cpu)':>13} {'scorer rows/s':>14}")
    for name, target in TARGETS.items():
        path = ROOT / "problems" / "dsm" / f"{name}.toml"
        wall, cpu_run = cli_seconds(path)
        problem = load(path)
        runs = [engine_run(problem) for _ in range(args.repeat)]
        seconds, cpu, scored = min(runs, key=lambda r: r[1])
        verdict = "-" if target is None else f"{target:g} {'ok' if wall < target else 'MISSED'}"
        print(f"{name:16} {wall:13.2f} {cpu_run:10.2f} {verdict:>9} {seconds:9.2f} {cpu:13.2f} {scored:12,d} "
              f"{scored / cpu:13,.0f} {scorer_rows_per_second(problem):14,.0f}")


if __name__ == "__main__":
    main()
