"""Engines side by side: every engine × seed under one budget on one problem's cost model.

Each run is exactly ``optmap.solve(problem, engine, seed, budget)``, so a row's numbers are those
of the individual runs (``optmap run --search E --seed S``). The summary is on the first
objective:

- best (mean, min, max over seeds) and the gap of the mean to the best known value: the exact
  optimum when an engine marked ``exact`` completed (e.g. exhaustive), else the best any run found;
- how many runs came within 1 % of the best known value, and the evaluations and seconds they
  needed (mean over those runs);
- evaluations and wall seconds per run; the speedup of the baseline's value over each engine's.

A maximised objective (throughput) is compared the other way round: the best known value is the
largest, the gap is how far below it an engine stays, and the speedup is engine / baseline.

An engine that fails (say, no feasible mapping within the budget) is counted in ``failed`` and
the comparison goes on; every engine is built (options, capabilities) before any run starts.

Ctrl-C (or SIGTERM, or a stop requested through the evaluator) stops the comparison as a whole:
the run it reached ends like an interrupted ``optmap run`` (its best so far is kept), no further
run starts, and ``interrupted`` says so. The table counts per engine the runs that were cut
short or never started (``interrupted``); their values count towards the best known value but
not towards the engine's statistics, which are those of its finished runs.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from optmap.errors import OptmapError
from optmap.problem import Problem
from optmap.run import SearchFailed, make_engine, solve
from optmap.search import Budget, SearchResult

CLOSE = 0.01  # "within 1 % of the best known value"
GAP_FLOOR = 1e-4  # percent: the figure's log axis draws smaller gaps (the best known value) here


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
    senses: tuple[str, ...] = ("min",)
    interrupted: bool = False  # stopped by Ctrl-C / SIGTERM before every run finished

    def to_json(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "objective": self.objective,
            "baseline": self.baseline,
            "best_known": self.best_known,
            "best_known_source": self.best_known_source,
            "senses": list(self.senses),
            "interrupted": self.interrupted,
            "rows": self.rows,
            "runs": [run.to_json() for run in self.runs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Comparison":
        """A saved comparison (``compare --json``) again, to redraw its figure."""
        from optmap.saved import result_from_json

        best = data.get("best_known")
        return cls(data.get("problem") or "?", data["objective"], data.get("baseline"),
                   float("nan") if best is None else float(best),
                   data.get("best_known_source", "best found"), [result_from_json(run) for run in data["runs"]],
                   list(data["rows"]), tuple(data.get("senses") or ("min",)), bool(data.get("interrupted", False)))

    def json_text(self, provenance: dict[str, Any] | None = None) -> str:
        """The table and every run (mapping, report, history), as strict JSON, with the
        ``provenance`` of the file when given (:mod:`optmap.provenance`)."""
        from optmap.output import json_text

        return json_text({**self.to_json(), **({"provenance": provenance} if provenance else {})})

    def csv_texts(self) -> tuple[str, str]:
        """The table, and every run's best-so-far history, as CSV texts."""
        table, history = io.StringIO(), io.StringIO()
        writer = csv.DictWriter(table, fieldnames=list(self.rows[0]))
        writer.writeheader()
        writer.writerows(self.rows)
        rows = csv.writer(history)
        rows.writerow(["engine", "seed", "evaluations", "seconds", f"best_{self.objective}"])
        for run in self.runs:
            rows.writerows([run.engine, run.seed, h.evaluations, h.seconds, h.best] for h in run.history)
        return table.getvalue(), history.getvalue()

    def plot(self) -> bytes:
        """A PNG of each engine's gap to the best known value against evaluations (both axes
        logarithmic, so engines a thousandfold apart stay readable), and each engine's per-layer
        compute and communication seconds beside it (when the cost model reports layers).

        The line is the median over seeds (band: min to max); an engine that scores a single
        plan (a fixed plan, a DP) is a dashed horizontal line at its gap. A gap below
        ``GAP_FLOOR`` percent (the best known value itself) is drawn at the floor.
        """
        from optmap.plots import has_layers, layer_bars, pyplot

        plt = pyplot()
        engines = list(dict.fromkeys(run.engine for run in self.runs))
        # beside the convergence: each engine's per-layer seconds (its first seed's run)
        layered = [(name, run.report) for name in engines
                   for run in [next((r for r in self.runs if r.engine == name and has_layers(r.report)), None)] if run]
        figure, panels = plt.subplots(1, 2 if layered else 1, squeeze=False, figsize=(17 if layered else 7.5, 4.8),
                                      gridspec_kw={"width_ratios": [1, 1.6]} if layered else None)
        axes = panels[0][0]
        if layered:
            layer_bars(panels[0][1], layered)
        longest = max((run.evaluations for run in self.runs), default=1)
        sign = -1.0 if self.senses[0] == "max" else 1.0

        def gap(values) -> np.ndarray:
            return gap_percent(values, self.best_known, sign)

        for index, name in enumerate(engines):
            colour = f"C{index % 10}"
            mine = [r for r in self.runs if r.engine == name and r.values]
            if not mine:
                continue
            if max(r.evaluations for r in mine) <= 1 or max(len(r.history) for r in mine) <= 1:
                value = gap(np.median([r.values[self.objective] for r in mine]))
                axes.axhline(float(value), color=colour, linestyle="--", linewidth=1.2, label=name)
                continue
            grid = np.unique(np.concatenate([[h.evaluations for h in r.history] for r in mine]))
            with np.errstate(invalid="ignore"):  # inf before a run's first feasible mapping: not drawn
                curves = gap(np.array([_best_at(r, grid, sign) for r in mine]))
            axes.step(grid, np.median(curves, 0), where="post", color=colour, label=name)
            if len(mine) > 1:
                axes.fill_between(grid, curves.min(0), curves.max(0), step="post", color=colour, alpha=0.15)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(1, max(longest, 10))
        axes.axhline(GAP_FLOOR, color="black", linewidth=0.6, linestyle=":", label=f"reached (< {GAP_FLOOR:g} %)")
        axes.set_xlabel("evaluations")
        unit = next((r.units.get(self.objective) for r in self.runs if r.units.get(self.objective)), "")
        axes.set_ylabel(f"gap to best known {self.objective} (%)")
        cut = ", interrupted" if self.interrupted else ""
        axes.set_title(f"{self.problem} ({self.best_known_source} {self.best_known:.5g}{' ' + unit if unit else ''}"
                       f"{cut})", fontsize=10)
        axes.legend(fontsize=8)
        figure.tight_layout()
        image = io.BytesIO()
        figure.savefig(image, format="png", dpi=120)
        plt.close(figure)
        return image.getvalue()


def gap_percent(values, best_known: float, sign: float = 1.0) -> np.ndarray:
    """How far ``values`` are from ``best_known``, in percent of it (``sign`` -1: a maximised
    objective), floored at ``GAP_FLOOR`` so that the best known value itself sits on a log axis."""
    scale = abs(best_known) or 1.0
    return np.maximum(100 * sign * (np.asarray(values, float) - best_known) / scale, GAP_FLOOR)


def _best_at(run: SearchResult, grid: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """A run's best-so-far after each number of evaluations in ``grid`` (before its first: the
    worst value, inf for a minimised objective, -inf for a maximised one, ``sign`` -1)."""
    evaluations = np.array([h.evaluations for h in run.history])
    best = np.array([h.best for h in run.history])
    index = np.searchsorted(evaluations, grid, side="right") - 1
    return np.where(index >= 0, best[np.maximum(index, 0)], sign * np.inf)


def _first_within(run: SearchResult, target: float, sign: float) -> tuple[float, float]:
    """The evaluations and seconds a run needed to reach ``target`` (``sign`` -1: maximised)."""
    for point in run.history:
        if sign * point.best <= sign * target:
            return point.evaluations, point.seconds
    return math.nan, math.nan


def _is_exact(engine, run: SearchResult) -> bool:
    """An exact engine's answer is the optimum only if it finished: its own ``complete`` fact
    when it reports one (exhaustive enumerates the whole space whatever the budget), else a
    run that was not cut short."""
    if not getattr(engine, "exact", False) or run.stopped == "interrupted" or run.stopped.startswith("error"):
        return False
    return bool(run.extra.get("complete", run.stopped == "complete"))


def _mean(values) -> float | int:
    """Mean of the non-NaN values (NaN if none), as an int when whole (evaluation counts)."""
    values = [v for v in values if not math.isnan(v)]
    mean = float(np.mean(values)) if values else math.nan
    return int(mean) if mean.is_integer() else mean


def compare(
    problem: Problem,
    engines: Sequence[str],
    seeds: Sequence[int] = (0,),
    budget: Budget | None = None,
    baseline: str | None = None,
    on_run: Callable[[SearchResult], None] | None = None,
    progress: Callable | None = None,
    on_start: Callable[[str, int], None] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
) -> Comparison:
    """Run every engine for every seed on ``problem`` and summarise them on its first objective.

    Deterministic engines still run once per seed, so every row averages the same number of
    runs. ``on_start(engine, seed)`` and ``on_run(result)`` are called around each run;
    ``workers`` / ``scheduler`` score batches in parallel (one pool for all runs).
    """
    if not engines:
        raise OptmapError("compare needs at least one engine")
    if baseline is not None and baseline not in engines:
        raise OptmapError(f"baseline '{baseline}' is not among the compared engines: {', '.join(engines)}")
    objective = problem.objectives[0]
    sign = -1.0 if (problem.senses or ("min",))[0] == "max" else 1.0  # -1: more is better
    built = {name: make_engine(problem, name) for name in engines}
    runs: list[SearchResult] = []
    failed: dict[str, int] = {name: 0 for name in engines}
    exact_values = []
    interrupted = False
    with contextlib.ExitStack() as stack:
        scorer = None
        if workers or scheduler:
            from optmap.parallel import ParallelScorer

            scorer = stack.enter_context(ParallelScorer(problem.cost_model, workers, scheduler))
        try:
            for name, seed in itertools.product(engines, seeds):
                if on_start is not None:
                    on_start(name, seed)
                try:
                    run = solve(problem, engine=name, seed=seed, budget=budget, progress=progress,
                                batch_evaluate=scorer)
                except SearchFailed as failure:
                    failed[name] += 1
                    run = failure.result
                    run.extra = {**run.extra, "error": str(failure)}
                runs.append(run)
                if run.values and _is_exact(built[name], run):
                    exact_values.append(run.values[objective])
                if on_run is not None:
                    on_run(run)
                if run.stopped == "interrupted":  # Ctrl-C / SIGTERM stops the comparison, not just this run
                    interrupted = True
                    break
        except KeyboardInterrupt:  # between runs, or a second Ctrl-C: what finished is kept
            interrupted = True
    found = [run.values[objective] for run in runs if run.values]
    if not found and interrupted:
        raise KeyboardInterrupt  # nothing to keep: the command line says "interrupted", exit 130
    if not found:
        errors = [f"{run.engine} (seed {run.seed}): {run.extra['error']}" for run in runs if run.extra.get("error")]
        raise OptmapError(f"no run produced a result: {errors[0]}" if errors else
                          "no engine found a feasible mapping; relax [constraints] or raise the budget")
    best = min if sign > 0 else max
    if exact_values and sign * best(exact_values) <= sign * best(found):
        best_known, source = best(exact_values), "exact optimum"
    else:
        best_known, source = best(found), "best found"
    table = Comparison(problem.name, objective, baseline, best_known, source, runs,
                       senses=tuple(problem.senses or ("min",)), interrupted=interrupted)
    target = best_known + sign * CLOSE * abs(best_known)
    base = [r.values[objective] for r in runs
            if r.engine == baseline and r.values and r.stopped != "interrupted"]
    base_value = float(np.mean(base)) if base else None
    for name in engines:
        cut = sum(r.engine == name and r.stopped == "interrupted" for r in runs)
        mine = [r for r in runs if r.engine == name and r.values and r.stopped != "interrupted"]
        values = np.array([r.values[objective] for r in mine]) if mine else np.array([math.nan])
        reach = [_first_within(r, target, sign) for r in mine]
        mean = float(values.mean())
        row = {
            "engine": name,
            "runs": len(mine),
            "failed": failed[name],
            "best_mean": mean,
            "best_min": float(values.min()),
            "best_max": float(values.max()),
            "gap_percent": float(100 * sign * (mean - best_known) / abs(best_known)) + 0.0 if best_known else math.nan,
            "within_1pct": sum(not math.isnan(e) for e, _ in reach),
            "evals_to_1pct": _mean(e for e, _ in reach),
            "seconds_to_1pct": _mean(s for _, s in reach),
            "evaluations": _mean(r.evaluations for r in mine),
            "wall_seconds": _mean(r.seconds for r in mine),
        }
        if interrupted:  # runs cut short or never started: not in this row's statistics
            row["interrupted"] = cut + len(seeds) - sum(r.engine == name for r in runs)
        if baseline is not None:
            ratio = (base_value / mean if sign > 0 else mean / base_value) if base_value and mean else math.nan
            row["speedup"] = float(ratio)
        table.rows.append(row)
    return table
