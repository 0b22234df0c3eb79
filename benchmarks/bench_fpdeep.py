"""FPDeep benchmarks: the fpdeep engine's speed, and the whole scaling study.

Not a test; prints figures. ``python benchmarks/bench_fpdeep.py [--repeats N]``.

1. The ``fpdeep`` engine mapping VGG-19 onto 100 FPGAs (150 Gb/s, where the links bind, and 250
   Gb/s), problem building excluded: median and best of ``--repeats`` runs. Target: under 1 s.
2. ``evaluate_batch`` on that problem (generic engines score populations through it).
3. The whole 5–100 FPGA scaling study (AlexNet, VGG-16, VGG-19 × 150 and 250 Gb/s, every fifth
   size plus the sizes that locate each linear-scaling limit to one FPGA), problem building
   included, as ``examples/reproduce_fpdeep.py`` runs it. Target: under 60 s.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import optmap
from optmap.plugins.fpdeep import study


def engine_speed(repeats: int) -> None:
    print("1. fpdeep engine, VGG-19 on 100 FPGAs")
    for variant, accelerator in study.VARIANTS.items():
        problem = study.problem("vgg19", 100, (f'system.groups.0.accelerator="{accelerator}"',))
        times, result = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            result = optmap.solve(problem, engine="fpdeep")
            times.append(time.perf_counter() - start)
        m = result.report.metrics
        print(f"   {variant} Gb/s: median {statistics.median(times):.3f} s, best {min(times):.3f} s "
              f"({result.evaluations} evaluations; {m['throughput']:.1f} img/s, {result.report.plan['bound']}-bound)")


def batch_speed() -> None:
    model = study.problem("vgg19", 100).cost_model
    X = model.space.sample(np.random.default_rng(0), 256)
    model.evaluate_batch(X[:8])
    start, repeats = time.perf_counter(), 0
    while time.perf_counter() - start < 2.0:
        model.evaluate_batch(X)
        repeats += 1
    seconds = (time.perf_counter() - start) / repeats
    print(f"2. evaluate_batch, VGG-19 on 100 FPGAs ({model.space.width} decisions): "
          f"{len(X) / seconds:,.0f} mappings/s")


def scaling_study() -> None:
    start = time.perf_counter()
    result = study.scaling_study()
    seconds = time.perf_counter() - start
    plans = sum(len(points) for points, _ in result.values())
    limits = ", ".join(f"{net} {variant}: {limit or '> 100'}" for (net, variant), (_, limit) in result.items())
    print(f"3. scaling study, 5-100 FPGAs: {plans} plans in {seconds:.1f} s ({seconds / plans * 1e3:.0f} ms each)")
    print(f"   linear-scaling limits: {limits}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {platform.processor() or 'unknown cpu'}, "
          f"python {platform.python_version()}")
    engine_speed(args.repeats)
    batch_speed()
    scaling_study()


if __name__ == "__main__":
    main()
