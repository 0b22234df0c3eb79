"""Where a generic engine's time goes (issue 14, item 4), on problems/accpar/hetero-vgg19.toml.

- ``ga`` with 20,000 evaluations: CPU seconds in all, and the share spent in the cost model's
  ``evaluate_batch`` (the rest is pymoo's bookkeeping: selection, mating, duplicate hashing,
  survival on its Individual objects);
- ``optuna`` with its default sampler (TPE) for ``--trials`` trials: trials per CPU second, the
  best time found beside the ``accpar`` engine's, and whether it started from the formulation's
  named plans.

    python benchmarks/bench_engine_overhead.py [--evaluations 20000] [--trials 300]
"""

from __future__ import annotations

import argparse
import time

from timing import ROOT, machine

import optmap
from optmap.run import solve
from optmap.search import Budget

PROBLEM = ROOT / "problems" / "accpar" / "hetero-vgg19.toml"


def with_model_clock(problem):
    """Wrap the cost model's batch scoring so its CPU seconds are counted."""
    model, spent = problem.cost_model, [0.0]
    score = model.evaluate_batch

    def counted(X, *args, **kwargs):
        start = time.process_time()
        try:
            return score(X, *args, **kwargs)
        finally:
            spent[0] += time.process_time() - start

    model.evaluate_batch = counted
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=20_000)
    parser.add_argument("--trials", type=int, default=300)
    args = parser.parse_args()
    print(machine())
    problem = optmap.load(PROBLEM)
    spent = with_model_clock(problem)
    solve(problem, engine="ga", seed=0, budget=Budget(evaluations=2_000))  # imports and warm-up
    spent[0] = 0.0
    start = time.process_time()
    result = solve(problem, engine="ga", seed=0, budget=Budget(evaluations=args.evaluations))
    total = time.process_time() - start
    print(f"ga, {result.evaluations:,} evaluations, {result.extra.get('generations')} generations: {total:.2f} s CPU, "
          f"{spent[0]:.2f} s in the cost model ({spent[0] / total:.0%}), best time {result.values['time']:.6g}")
    dp = solve(problem, engine="accpar", seed=0).values["time"]
    start = time.process_time()
    result = solve(problem, engine="optuna", seed=0, budget=Budget(evaluations=args.trials))
    total = time.process_time() - start
    print(f"optuna ({result.extra.get('sampler')}), {result.evaluations} trials: {result.evaluations / total:.0f} trials "
          f"per CPU second, best time {result.values['time']:.6g} vs the accpar engine's {dp:.6g} "
          f"({result.values['time'] / dp - 1:+.1%}); note: {result.extra.get('note', 'none')}")


if __name__ == "__main__":
    main()
