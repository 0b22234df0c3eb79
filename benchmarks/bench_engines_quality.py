"""How close the generic engines come to AccPar's DP plan on VGG-19, 128 TPU-v2 + 128 TPU-v3,
within one evaluation budget (default 20,000) over several seeds; and whether searching all
levels jointly finds plans better than AccPar's level-by-level DP.

Variants: ``ga`` as is and seeded with the AccPar plan; ``optuna`` with its default TPE sampler
(capped at 1,000 trials: TPE's cost grows with the number of trials) and with the NSGA-II
sampler over the whole budget; ``random``. Each row: best time (mean, min, max over seeds), gap
of the mean to AccPar's plan, seeds that beat it, evaluations, wall seconds.

    /work/venv/bin/python benchmarks/bench_engines_quality.py [--seeds 0,1,2,3,4] [--budget 20000]
        [--variants ga,ga+accpar,optuna-tpe,optuna-nsga2,random]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import optmap
from optmap.search import Budget

PROBLEM = Path(__file__).resolve().parent.parent / "problems" / "accpar" / "hetero-vgg19.toml"

VARIANTS = {
    "ga": ("ga", {}),
    "ga+accpar": ("ga", {"seed_plans": ["accpar"]}),
    "optuna-tpe": ("optuna", {"sampler": "tpe"}),
    "optuna-nsga2": ("optuna", {"sampler": "nsga2", "max_trials": None}),
    "random": ("random", {}),
}


def plan_difference(model, joint: np.ndarray, dp: np.ndarray) -> str:
    """Which decisions of the joint plan differ from the DP plan, by level."""
    names = model.space.names
    changed = [names[i] for i in np.flatnonzero(joint != dp)]
    by_level: dict[str, list[str]] = {}
    for name in changed:
        level, _, layer = name.partition(":")
        by_level.setdefault(level if layer else "share", []).append(layer or name)
    return "; ".join(f"{level}: {', '.join(layers)}" for level, layers in by_level.items()) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    problem = optmap.load(PROBLEM)
    budget = Budget(evaluations=args.budget)
    reference = optmap.solve(problem, "accpar")
    dp_value = reference.values["time"]
    print(f"{problem.name}: AccPar DP plan {dp_value:.6f} s per step ({reference.evaluations} evaluations); "
          f"budget {args.budget:,} evaluations, seeds {seeds}\n")
    header = (f"{'variant':<13} {'mean':>9} {'min':>9} {'max':>9} {'gap %':>7} {'beat DP':>7} "
              f"{'evals':>7} {'seconds':>8}")
    print(header)
    print("-" * len(header))
    best_joint = None
    for label in args.variants.split(","):
        engine, options = VARIANTS[label]
        runs = [optmap.solve(problem, engine, seed=seed, budget=budget, options=options) for seed in seeds]
        values = np.array([r.values["time"] for r in runs])
        beat = int(np.sum(values < dp_value * (1 - 1e-9)))
        print(f"{label:<13} {values.mean():>9.5f} {values.min():>9.5f} {values.max():>9.5f} "
              f"{100 * (values.mean() / dp_value - 1):>7.2f} {beat:>4}/{len(runs):<2} "
              f"{np.mean([r.evaluations for r in runs]):>7,.0f} {np.mean([r.seconds for r in runs]):>8.1f}",
              flush=True)
        for run in runs:
            if best_joint is None or run.values["time"] < best_joint.values["time"]:
                best_joint = run
    print()
    if best_joint is not None and best_joint.values["time"] < dp_value * (1 - 1e-9):
        gain = 100 * (1 - best_joint.values["time"] / dp_value)
        print(f"joint search beats the level-by-level DP: {best_joint.engine} (seed {best_joint.seed}) "
              f"{best_joint.values['time']:.6f} s, {gain:.3f} % faster than AccPar's plan.")
        print("decisions that differ from the DP plan: "
              + plan_difference(problem.cost_model, best_joint.best.array, reference.best.array))
    else:
        print("no variant found a plan better than AccPar's level-by-level DP.")


if __name__ == "__main__":
    main()
