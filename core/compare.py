"""Engines side by side: every engine × seed under one budget on one problem's cost model."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from optmap.problem import Problem
from optmap.run import make_engine, solve
from optmap.search import Budget, SearchResult

CLOSE = 0.01  # "within 1 % of the best known value"


@dataclass
class Comparison:
    """The runs of a comparison and its summary table (one row per engine)."""

    problem: str
    objective: str
    baseline: str | None
    best_known: float
    best_known_source: str
    runs: list[SearchResult] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "objective": self.objective,
            "baseline": self.baseline,
            "best_known": self.best_known,
            "best_known_source": self.best_known_source,
            "rows": self.rows,
            "runs": [run.to_json() for run in self.runs],
        }

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1, default=float))

    def write_csv(self, path: str | Path) -> None:
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(self.rows[0]))
            writer.writeheader()
            writer.writerows(self.rows)

    def plot(self, path: str | Path) -> None:
        """Best-so-far against evaluations, one line per engine (seed 0's run, others faint)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            from optmap.errors import OptmapError

            raise OptmapError("--plot needs matplotlib: pip install 'optmap[plot]'") from None
        figure, axes = plt.subplots(figsize=(7, 4.5))
        colours = {}
        for run in self.runs:
            points = [(h.evaluations, h.best) for h in run.history if math.isfinite(h.best)]
            if not points:
                continue
            x, y = zip(*points)
            colour = colours.setdefault(run.engine, f"C{len(colours) % 10}")
            label = run.engine if run.engine not in [l.get_label() for l in axes.lines] else None
            axes.step(x, y, where="post", color=colour, label=label, alpha=0.9)
        axes.set_xscale("symlog")
        axes.set_xlabel("evaluations")
        axes.set_ylabel(f"best {self.objective}")
        axes.set_title(self.problem)
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=120)
        plt.close(figure)


def _first_within(run: SearchResult, target: float) -> tuple[float, float]:
    for point in run.history:
        if point.best <= target:
            return point.evaluations, point.seconds
    return math.nan, math.nan


def compare(
    problem: Problem,
    engines: Sequence[str],
    seeds: Sequence[int] = (0,),
    budget: Budget | None = None,
    baseline: str | None = None,
    on_run: Callable[[SearchResult], None] | None = None,
    progress: Callable | None = None,
) -> Comparison:
    """Run every engine for every seed on ``problem`` and summarise them on its first objective.

    Deterministic engines (``exact`` or without randomness) still run once per seed, so every
    row averages the same number of runs. ``on_run`` is called after each run (e.g. to save it).
    """
    objective = problem.objectives[0]
    runs: list[SearchResult] = []
    exact_values = []
    for name in engines:
        exact = getattr(make_engine(problem, name), "exact", False)
        for seed in seeds:
            run = solve(problem, engine=name, seed=seed, budget=budget, progress=progress)
            runs.append(run)
            if exact:
                exact_values.append(run.values[objective])
            if on_run is not None:
                on_run(run)
    found = min(run.values[objective] for run in runs)
    best_known, source = (min(exact_values), "exact optimum") if exact_values else (found, "best found")
    table = Comparison(problem.name, objective, baseline, best_known, source, runs)
    base_value = None
    if baseline is not None:
        base_value = float(np.mean([r.values[objective] for r in runs if r.engine == baseline]))
    for name in engines:
        mine = [r for r in runs if r.engine == name]
        values = np.array([r.values[objective] for r in mine])
        reach = np.array([_first_within(r, best_known * (1 + CLOSE)) for r in mine])
        row = {
            "engine": name,
            "runs": len(mine),
            "best_mean": float(values.mean()),
            "best_min": float(values.min()),
            "best_max": float(values.max()),
            "gap_percent": float(100 * (values.mean() - best_known) / abs(best_known)) if best_known else 0.0,
            "evals_to_1pct": float(np.nanmean(reach[:, 0])) if not np.isnan(reach[:, 0]).all() else math.nan,
            "seconds_to_1pct": float(np.nanmean(reach[:, 1])) if not np.isnan(reach[:, 1]).all() else math.nan,
            "evaluations": float(np.mean([r.evaluations for r in mine])),
            "wall_seconds": float(np.mean([r.seconds for r in mine])),
        }
        if base_value is not None:
            row["speedup"] = float(base_value / values.mean())
        table.rows.append(row)
    return table
