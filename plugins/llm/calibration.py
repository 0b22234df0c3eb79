"""Calibration of the A100 efficiencies on published Megatron-LM runs, with held-out errors.

``python examples/calibrate_llm.py`` fits the two A100 constants of :mod:`.compute`
(``gemm``: large-GEMM fraction of the 312 TFLOP/s peak; ``memory``: fraction of the 2,039 GB/s
HBM that memory-bound kernels reach) on the Megatron-LM runs of :mod:`.published`, by a grid
search minimising the mean absolute relative error of the predicted iteration time. The GEMM
shape curve is not fitted here: it comes from the H100 measurements (:mod:`.compute`).

Every constant is fitted on many runs of several papers at once, never on one run, and the
errors are held out **by source**: for each of the three Megatron-LM sources (Korthikanti et al.
2022 Table 5; Narayanan et al. SC'21 Tables 1 and 2) the constants are fitted on the other two
and the error is measured on it. The shipped constants are the fit on all three. The DeepSpeed
MT-NLG runs are never fitted (a different pipeline engine).

A run's prediction pins the decisions its paper reports (and Megatron-LM's defaults for what it
does not, see :mod:`.published`), sets the cost-model options of the run's software, and lets
the planner choose what is left (the micro-batch of Narayanan's Table 1): the best feasible plan.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
from optmap.system import Accelerator, GroupSpec
from optmap.workload.transformer import TransformerWorkload

from .cluster import dgx_a100
from .compute import A100_FIT, Device, Efficiency
from .engine import plan_table
from .model import Megatron3DCostModel
from .published import MEGATRON_SOURCES, Run, runs

GEMM_GRID = np.round(np.arange(0.70, 0.901, 0.01), 3)
MEMORY_GRID = np.round(np.arange(0.55, 1.001, 0.05), 3)


def workload_for(run: Run, dtype: str, *, host) -> TransformerWorkload:
    """The run's GPT as the ``transformer`` workload (plugin ``transformer``, through the host): a
    Megatron GPT of any size is the ``gpt3-175b`` preset resized, as :func:`optmap.workload.transformer.megatron_gpt` builds both."""
    cfg = run.config
    sizes = {"layers": cfg.layers, "d_model": cfg.d_model, "heads": cfg.heads, "head_dim": cfg.head_dim,
             "d_ff": cfg.d_ff, "seq_len": cfg.seq_len, "max_positions": cfg.max_positions}
    workload = host.build("workload", "transformer",
                          options={"preset": "gpt3-175b", "batch": run.batch, "dtype": dtype, **sizes})
    if workload.config.with_(name=cfg.name) != cfg:
        raise AssertionError(f"the transformer workload does not rebuild {cfg.name}: {workload.config}")
    return workload


def model_for(run: Run, dtype: str = "fp16", accelerator: Accelerator | None = None, *, host,
              **options) -> Megatron3DCostModel:
    """The megatron-3d model of a run on a DGX-A100 cluster of exactly its GPU count (``options``
    are cost-model options on top of the run's own; ``accelerator`` defaults to the ``a100``
    preset of the host's plugins)."""
    accelerator = accelerator or host.get("accelerator", "a100").resolve()
    system = dgx_a100([GroupSpec(accelerator, run.gpus)])
    return Megatron3DCostModel(workload_for(run, dtype, host=host), system, **{**run.options, **options})


@dataclass
class Case:
    run: Run
    model: Megatron3DCostModel
    allowed: dict  # per decision, the values the run's published decisions leave open


def cases(which=None, *, host) -> list[Case]:
    out = []
    for run in runs():
        if which is not None and run.source not in which:
            continue
        model = model_for(run, host=host)
        allowed = {v.name: np.array([run.fixed[v.name]] if v.name in run.fixed else v.choices, dtype=object)
                   for v in model.space.variables}
        out.append(Case(run, model, allowed))
    return out


def predict(case: Case, eff: Efficiency | None = None) -> tuple[float, dict]:
    """Best feasible predicted iteration time of a run, and that plan's decisions and columns;
    ``eff`` replaces the fitted roofline's constants (None: the model's own compute)."""
    m = case.model
    if eff is not None:
        m.device = Device(m.device.peak_flops, m.device.memory_bandwidth, eff)
    values, cols = plan_table(m, case.allowed)
    ok = np.flatnonzero(cols.get("feasible", np.zeros(0, bool)))
    if not len(ok):
        return float("nan"), {}
    i = ok[np.argmin(cols["time"][ok])]
    return float(cols["time"][i]), {"plan": {k: v[i].item() for k, v in values.items()},
                                    **{k: float(c[i]) for k, c in cols.items()}}


def errors(cs: list[Case], eff: Efficiency | None = None) -> np.ndarray:
    """Relative errors (predicted / measured - 1) of the runs ``cs``."""
    return np.array([predict(c, eff)[0] / c.run.measured_s - 1.0 for c in cs])


def grid(cs: list[Case]) -> dict[tuple[float, float], np.ndarray]:
    """The errors of every run of ``cs`` at every (gemm, memory) of the grid (the cases' own
    compute is restored afterwards)."""
    devices = [c.model.device for c in cs]
    table = {(g, m): errors(cs, replace(A100_FIT, gemm=float(g), memory=float(m)))
             for g, m in itertools.product(GEMM_GRID, MEMORY_GRID)}
    for c, device in zip(cs, devices):
        c.model.device = device
    return table


def fit(table: dict[tuple[float, float], np.ndarray], rows: np.ndarray) -> Efficiency:
    """The grid point minimising the mean absolute error over the runs ``rows`` (a mask)."""
    g, m = min(table, key=lambda k: float(np.mean(np.abs(table[k][rows]))))
    return replace(A100_FIT, gemm=float(g), memory=float(m))


def held_out(cs: list[Case], table=None) -> list[tuple[str, Efficiency, np.ndarray]]:
    """Per Megatron-LM source: the constants fitted on the other sources and its errors with them."""
    table = table if table is not None else grid(cs)
    source = np.array([c.run.source for c in cs])
    out = []
    for held in MEGATRON_SOURCES:
        train = np.isin(source, [s for s in MEGATRON_SOURCES if s != held])
        eff = fit(table, train)
        out.append((held, eff, table[(eff.gemm, eff.memory)][source == held]))
    return out


def summary(err: np.ndarray) -> str:
    err = np.abs(err)
    return f"mean {100 * err.mean():.2f} %, max {100 * err.max():.2f} % over {len(err)} runs"
