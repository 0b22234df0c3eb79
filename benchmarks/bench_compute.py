"""Speed of the shared compute model: AccPar scoring mappings on measured vs datasheet devices.

VGG-19 on 16 devices (4 bisection levels): the same random mappings scored with `h100-sxm`
(every leaf priced by the compute model on its shard) and with the same datasheet without its
calibration (Eq. 8, FLOPs over peak). Prints evaluations per second for each and the fit time of
the H100 calibration (1,376 timings).

    python benchmarks/bench_compute.py
"""

from __future__ import annotations

import time

import numpy as np

from optmap.compute import read_preset, with_calibration
from optmap.compute.fit import fit_calibration
from optmap.plugins.accpar.model import AccParCostModel
from optmap.host import load_host
from optmap.plugins.hardware import PRESET_FILES, h100, topologies
from optmap.plugins.zoo.models import vgg19
from optmap.system import GroupSpec


def rate(model, X, seconds: float = 3.0) -> float:
    model.evaluate_batch(X)
    best, spent = np.inf, 0.0
    while spent < seconds:
        start = time.perf_counter()
        model.evaluate_batch(X)
        took = time.perf_counter() - start
        best, spent = min(best, took), spent + took
    return len(X) / best


def main() -> None:
    measured = read_preset(PRESET_FILES / "h100-sxm.toml")
    workload = vgg19(batch=512, dtype="bf16")
    X = None
    for label, accelerator in (("datasheet peak (Eq. 8)", with_calibration(measured, None)),
                               ("measured h100-sxm", measured)):
        model = AccParCostModel(workload, topologies.TOPOLOGIES["fully-connected"]([GroupSpec(accelerator, 16)]))
        if X is None:
            X = np.random.default_rng(0).integers(0, 3, (4096, len(model.space))).astype(float)
        print(f"{label:24s} {rate(model, X):10,.0f} evaluations/s  (VGG-19, 16 devices, batch of 4096)")
    c = h100.ceilings()
    start = time.perf_counter()
    fit_calibration(h100.samples(load_host()), dtype="bf16", copy_bandwidth=c["copy_bandwidth"], kernel_s=h100.KERNEL_S,
                    gemm_flops=c["gemm_flops"])
    print(f"fit of the h100-sxm calibration: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
