"""Calibration of the A100 efficiencies on published Megatron-LM runs, with held-out errors.

``python -m optmap.plugins.llm.calibration`` fits the two A100 constants of :mod:`.compute`
(``gemm``: large-GEMM fraction of the 312 TFLOP/s peak; ``memory``: fraction of the 2,039 GB/s
HBM that memory-bound kernels reach) on the Megatron-LM runs of :mod:`.published`, by a grid
search minimising the mean absolute relative error of the predicted iteration time. Every
constant is fitted on many runs of several papers at once, never on one run.

Fitted on the runs whose configuration is published (Korthikanti Table 5; Narayanan Table 2,
whose interleaving the planner chooses). Held out: leave one of those two sources out (fit on the
other, report the error on it); Narayanan Table 1 (micro-batch and interleaving unpublished, so
the planner chooses them) and the DeepSpeed MT-NLG runs are never fitted.

A run's prediction pins the decisions its paper reports and lets the planner choose the rest
(micro-batch and interleaving where unreported): the best feasible plan under those pins.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from optmap.plugins.hardware.accelerators import A100
from optmap.plugins.transformer.workload import build
from optmap.system import GroupSpec

from .cluster import dgx_a100
from .compute import A100_FIT, Device, Efficiency
from .engine import enumerate_plans
from .model import Megatron3DCostModel
from .published import Run, runs

FIT_SOURCES = ("korthikanti-t5", "narayanan-t2")

GEMM_GRID = np.round(np.arange(0.60, 0.951, 0.01), 3)
MEMORY_GRID = np.round(np.arange(0.50, 1.001, 0.10), 3)


def model_for(run: Run, dtype: str = "fp16") -> Megatron3DCostModel:
    """The megatron-3d model of a run on a DGX-A100 cluster of exactly its GPU count."""
    system = dgx_a100([GroupSpec(A100, run.gpus)])
    return Megatron3DCostModel(build(run.config, run.batch, dtype), system)


@dataclass
class Case:
    run: Run
    model: Megatron3DCostModel
    X: np.ndarray  # the plans allowed by the run's pinned decisions


def cases(which=None) -> list[Case]:
    out = []
    for run in runs():
        if which is not None and run.source not in which:
            continue
        model = model_for(run)
        choices = {v.name: np.array([run.fixed[v.name]] if v.name in run.fixed else v.choices, dtype=object)
                   for v in model.space.variables}
        out.append(Case(run, model, enumerate_plans(model, choices)))
    return out


def predict(case: Case, eff: Efficiency = A100_FIT) -> tuple[float, dict]:
    """Best feasible predicted iteration time of a run, and that plan's metrics."""
    m = case.model
    m.device = Device(m.device.peak_flops, m.device.memory_bandwidth, eff)
    cols = m.evaluate_batch(case.X)
    ok = np.flatnonzero(cols["feasible"])
    if not len(ok):
        return float("nan"), {}
    i = ok[np.argmin(cols["time"][ok])]
    plan = {k: v[0] for k, v in m.values(case.X[i:i + 1]).items()}
    return float(cols["time"][i]), {"plan": plan, **{k: float(np.asarray(v)[i]) for k, v in cols.items()}}


def errors(cs: list[Case], eff: Efficiency) -> np.ndarray:
    return np.array([predict(c, eff)[0] / c.run.measured_s - 1.0 for c in cs])


def fit(cs: list[Case]) -> tuple[Efficiency, float]:
    """Grid search of (gemm, memory) minimising the mean absolute relative error on ``cs``."""
    best = None
    for g, mem in itertools.product(GEMM_GRID, MEMORY_GRID):
        eff = Efficiency(gemm=float(g), memory=float(mem), half_dim=A100_FIT.half_dim, launch=A100_FIT.launch)
        err = np.abs(errors(cs, eff))
        score = float(np.nanmean(err)) if np.isfinite(err).all() else np.inf
        if best is None or score < best[1]:
            best = (eff, score)
    return best


def summary(cs: list[Case], eff: Efficiency) -> str:
    err = np.abs(errors(cs, eff))
    return f"mean {100 * err.mean():.2f} %, max {100 * err.max():.2f} % over {len(cs)} runs"


def main() -> None:
    cs = cases()
    by = {src: [c for c in cs if c.run.source == src] for src in dict.fromkeys(c.run.source for c in cs)}
    for held in FIT_SOURCES:
        eff, _ = fit([c for src in FIT_SOURCES if src != held for c in by[src]])
        print(f"fit without {held}: gemm={eff.gemm:.2f} memory={eff.memory:.2f}; held out {held}: {summary(by[held], eff)}")
    eff, _ = fit([c for src in FIT_SOURCES for c in by[src]])
    print(f"fit on {' + '.join(FIT_SOURCES)}: gemm={eff.gemm:.2f} memory={eff.memory:.2f}")
    for src, group in by.items():
        print(f"  {src}{' (fitted)' if src in FIT_SOURCES else ' (held out)'}: {summary(group, eff)}")


if __name__ == "__main__":
    main()
