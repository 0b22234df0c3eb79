"""AccTFM's sensitivity rows (docs/reproductions/acctfm.md): calibrations, clearly not defaults.

Usage::

    python examples/reproduce_acctfm.py                              # sensitivity A and B, ~1 min
    python examples/reproduce_acctfm.py --set cost.head_comm=false   # with any assumption changed

The ablation itself (Megatron-LM, pipeline only, compression only, AccTFM on TF8-TF64, beside the
paper) and the bandwidth curve are sweeps: ``problems/acctfm/ablation.sweep.toml`` and
``problems/acctfm/bandwidth.sweep.toml`` (``optmap sweep``). This script keeps what a grid
cannot express: one parameter (GEMM efficiency, or the per-device network bandwidth) is
*bisected* per model until the Megatron baseline's GPU idle rate equals the paper's Fig. 6
value, and the four variants are then run at that value:

* Megatron-LM:       engine ``megatron`` (every block K = 1, no compression)
* pipeline only:     engine ``acctfm`` with ``compression = "off"`` (Alg. 1, exact DP)
* compression only:  engine ``megatron`` with ``compression = "on"`` (the paper's CommC)
* AccTFM (both):     engine ``acctfm`` (exact DP for every compression setting, best kept)
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable

import optmap
from optmap.problem import Problem
from optmap.run import solve

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("tf8", "tf16", "tf32", "tf64")

# AccTFM §5.3 (text values of Fig. 5, 6, 7, 12): speedups over Megatron-LM and baseline idle rate.
PAPER = {
    "tf8": {"pipeline": 1.11, "compression": 1.89, "both": 2.08, "idle": 0.5915, "acctfm_idle": 0.1487},
    "tf16": {"pipeline": 1.22, "compression": 1.69, "both": 1.82, "idle": 0.5046, "acctfm_idle": 0.0819},
    "tf32": {"pipeline": 1.32, "compression": 1.44, "both": 1.49, "idle": 0.3755, "acctfm_idle": 0.0454},
    "tf64": {"pipeline": 1.18, "compression": 1.21, "both": 1.24, "idle": 0.2415, "acctfm_idle": 0.0473},
}


def ablation(problem: Problem) -> dict[str, float]:
    """Speedups of the three AccTFM variants over Megatron-LM, and idle rates, on one problem."""
    base = solve(problem, "megatron")
    runs = {
        "pipeline": solve(problem, "acctfm", options={"compression": "off"}),
        "compression": solve(problem, "megatron", options={"compression": "on"}),
        "both": solve(problem, "acctfm"),
    }
    out = {name: base.values["time"] / run.values["time"] for name, run in runs.items()}
    out.update(idle=base.report.metrics["idle_rate"], acctfm_idle=runs["both"].report.metrics["idle_rate"])
    return out


def bisect(make: Callable[[float], Problem], lo: float, hi: float, target: float, steps: int = 40) -> float:
    """The parameter value (log-bisection in [lo, hi]) at which Megatron's idle rate equals ``target``."""
    idle = lambda value: solve(make(value), "megatron").report.metrics["idle_rate"]  # noqa: E731
    rising = idle(hi) > idle(lo)
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if (idle(mid) < target) == rising:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def load_problem(model: str, *overrides: str) -> Problem:
    return optmap.load(ROOT / "problems" / "acctfm" / f"{model}.toml", list(overrides))


def network(gbps: float) -> tuple[str, str]:
    """Overrides that set the links' and every device's network bandwidth to ``gbps``."""
    return f"system.bandwidth_gbps={gbps}", f"system.groups.0.network_gbps={gbps}"


def row(label: str, result: dict, paper: dict | None = None) -> str:
    def cell(key: str, fmt: str, unit: str = "") -> str:
        ours = format(result[key], fmt) + unit
        return f"{ours} / {format(paper[key], fmt)}{unit}" if paper else ours

    return (f"| {label} | {cell('idle', '.1%')} | {cell('pipeline', '.2f', '×')} | {cell('compression', '.2f', '×')} "
            f"| {cell('both', '.2f', '×')} | {cell('acctfm_idle', '.1%')} |")


HEADER = ("| model | Megatron idle | pipeline only | compression only | AccTFM (both) | AccTFM idle |\n"
          "|---|---|---|---|---|---|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a key of every problem file, e.g. --set cost.head_comm=false")
    args = parser.parse_args()
    overrides = tuple(args.set)

    def load(model: str, *more: str) -> Problem:
        return load_problem(model, *overrides, *more)

    print("Sensitivity A (calibration, not a default): GEMM `efficiency` bisected so that Megatron's "
          "idle rate equals Fig. 6\n")
    print(HEADER.replace("| model |", "| model (efficiency) |"))
    for model in MODELS:
        eff = bisect(lambda e: load(model, f"cost.efficiency={e}"), 1e-3, 0.6, PAPER[model]["idle"])
        print(row(f"{model.upper()} ({eff:.3f})", ablation(load(model, f"cost.efficiency={eff}"))))

    print("\nSensitivity B (calibration, not a default): per-device network bandwidth bisected so that "
          "Megatron's idle rate equals Fig. 6\n")
    print(HEADER.replace("| model |", "| model (Gb/s) |"))
    for model in MODELS:
        gbps = bisect(lambda g: load(model, *network(g)), 1.0, 1e5, PAPER[model]["idle"])
        print(row(f"{model.upper()} ({gbps:.0f})", ablation(load(model, *network(gbps)))))


if __name__ == "__main__":
    main()
