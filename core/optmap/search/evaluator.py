"""`Evaluator`: the one scorer every engine calls; it keeps count, budget, pins and what was found.

Every engine, generic or native, scores mappings through the evaluator of one problem, so the
best mapping, the number of evaluations and the best-so-far history are measured the same way
for all of them, and a comparison is always on one scale. The pieces:

- scoring: rows are repaired by the evaluator's space (bounds, conditions, the formulation's
  repair, pinned decisions), scored by the cost model in one batch, and turned into minimised
  objective columns (a maximised metric is negated) and a constraint violation;
- stopping: the :class:`~optmap.search.Budget` and stop requests (Ctrl-C, SIGTERM);
- what was found: an :class:`~optmap.search.archive.Archive` (best, front, history);
- checkpointing: ``checkpoint`` (:mod:`optmap.checkpoint`) saves ``state()`` for ``--resume``.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from optmap.checkpoint import Checkpoint
from optmap.cost import CostModel, CostReport, evaluate_batch, unit
from optmap.errors import OptmapError
from optmap.search.archive import Archive
from optmap.search.budget import Budget
from optmap.search.result import SearchResult
from optmap.space import DesignSpace


class Evaluator:
    """Scores mappings for engines; counts evaluations, enforces the budget, keeps history.

    ``evaluate(X)`` returns ``(F, violation)``: minimised objective values (N, k) and a
    non-negative constraint violation (0 = feasible). ``__call__(X)`` returns F with ``inf``
    for infeasible rows, for engines without constraint handling.

    ``space`` is the space engines search: the cost model's, narrowed by pinned decisions
    (``[fix]``, ``--fix``, :meth:`child`). ``senses`` gives ``"min"`` / ``"max"`` per objective;
    ``constraints`` maps a metric to an upper bound, ``lower_bounds`` to a lower one.
    """

    def __init__(
        self,
        cost_model: CostModel,
        objectives: Sequence[str],
        constraints: dict[str, float] | None = None,
        budget: Budget = Budget(),
        progress: Callable[["Evaluator"], None] | None = None,
        batch_evaluate: Callable[[np.ndarray], dict[str, np.ndarray]] | None = None,
        checkpoint: Checkpoint | None = None,
        make_engine: Callable[[str], Any] | None = None,
        *,
        senses: Sequence[str] | None = None,
        lower_bounds: dict[str, float] | None = None,
        space: DesignSpace | None = None,
    ) -> None:
        self.cost_model = cost_model
        self.space = space if space is not None else cost_model.space
        self.objectives = tuple(objectives)
        self.senses = tuple(senses) if senses else ("min",) * len(self.objectives)
        self.signs = np.array([-1.0 if s == "max" else 1.0 for s in self.senses])
        self.constraints = dict(constraints or {})
        self.lower_bounds = dict(lower_bounds or {})
        self.budget = budget
        self.progress = progress
        self._batch = batch_evaluate or (lambda X: evaluate_batch(cost_model, X))
        self._scores_here = batch_evaluate is None  # else worker processes score (optmap.parallel)
        self.evaluations = 0
        self.started = time.perf_counter()
        self.stop_requested = False
        self.not_a_number = 0  # mappings with a NaN objective (infinity is a model's way to say infeasible)
        self.expected: int | None = None  # evaluations an engine announces it will make (progress bars)
        self.setup_seconds = 0.0  # one-off set-up of the cost model, off the clock (prepare)
        self.budget_note = ""  # why the budget is what it is, when an engine tightened it (progress lines)
        self.stop_signal: int | None = None  # the signal that asked to stop, if any
        self.checkpoint = checkpoint or Checkpoint()
        self._make_engine = make_engine
        self.archive = Archive(self.space.width, len(self.objectives), float(self.signs[0]))

    # --- what was found (the archive's, under the names engines use) ---------------------------
    @property
    def best_x(self) -> np.ndarray | None:
        return self.archive.best_x

    @property
    def best_f(self) -> np.ndarray | None:
        return self.archive.best_f

    @property
    def best_value(self) -> float:
        """The best first objective as a metric value."""
        return self.archive.best_value

    @property
    def front_x(self) -> np.ndarray:
        return self.archive.front_x

    @property
    def front_f(self) -> np.ndarray:
        return self.archive.front_f

    @property
    def history(self):
        return self.archive.history

    # --- stopping ------------------------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def exhausted(self) -> bool:
        """True once the budget is spent or a stop was requested (Ctrl-C, SIGTERM)."""
        b = self.budget
        return (
            self.stop_requested
            or (b.evaluations is not None and self.evaluations >= b.evaluations)
            or (b.seconds is not None and self.elapsed >= b.seconds)
        )

    @property
    def remaining_evaluations(self) -> int | None:
        if self.budget.evaluations is None:
            return None
        return max(0, self.budget.evaluations - self.evaluations)

    def prepare(self, rows: int | None = None) -> None:
        """Let the cost model set itself up (its ``prepare(rows)``, e.g. AccPar loading its
        compiled kernel) for a search of about ``rows`` plans (default: the evaluations left),
        off the clock: a process's one-off set-up is not the engine's search time, and in a
        comparison it would otherwise fall on whichever engine runs first. The seconds it took
        are kept in :attr:`setup_seconds` (the result's ``extra``). Nothing to do when other
        processes score the batches (``batch_evaluate``: workers prepare their own copy)."""
        prepare = getattr(self.cost_model, "prepare", None)
        if not callable(prepare) or not self._scores_here:
            return
        start = time.perf_counter()
        prepare(self.remaining_evaluations if rows is None else rows)
        took = time.perf_counter() - start
        self.started += took
        self.setup_seconds += took

    # --- engines and sub-searches ---------------------------------------------------------------
    def make_engine(self, name: str):
        """Another engine of this run's problem, built with the problem's options for it."""
        if self._make_engine is None:
            raise OptmapError(f"cannot build engine '{name}' here: run the search through optmap.solve")
        return self._make_engine(name)

    def child(self, fixed: dict[str, Any] | None = None, budget: Budget | None = None) -> "Evaluator":
        """A fresh evaluator of the same problem for a sub-search.

        ``fixed`` pins more decisions (by name) on top of this evaluator's pins, so a sub-search
        explores only the rest (optuna's ``PartialFixedSampler``; MARS's level-2 search). The
        budget is ``budget`` or what is left of this one's; :meth:`merge` counts the child's
        evaluations here.
        """
        b = self.budget
        left = budget or Budget(
            evaluations=None if b.evaluations is None else max(1, b.evaluations - self.evaluations),
            seconds=None if b.seconds is None else max(1e-3, b.seconds - self.elapsed),
        )
        space = self.space.pin({**self.space.pinned, **(fixed or {})}) if fixed else self.space
        child = Evaluator(self.cost_model, self.objectives, self.constraints, left, batch_evaluate=self._batch,
                          make_engine=self._make_engine, senses=self.senses, lower_bounds=self.lower_bounds,
                          space=space)
        child._scores_here = self._scores_here
        return child

    def merge(self, other: "Evaluator") -> None:
        """Count ``other``'s evaluations as this evaluator's; its best and front join this run's."""
        rows = [] if other.best_x is None else [(other.best_x, other.best_f)]
        rows += list(zip(other.front_x, other.front_f))
        X = np.array([x for x, _ in rows]).reshape(len(rows), self.space.width)
        F = np.array([f for _, f in rows]).reshape(len(rows), len(self.objectives))
        self.record(X, F, np.zeros(len(rows)), count=other.evaluations)

    # --- scoring -------------------------------------------------------------------------------
    def columns(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """The cost model's metric columns for the (repaired) rows of ``X``, without counting them."""
        return self._batch(self.space.repair(X))

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = self.space.repair(np.atleast_2d(np.asarray(X, float)))
        if len(X) == 0:
            return np.empty((0, len(self.objectives))), np.empty(0)
        columns = self._checked(self._batch(X), len(X))
        F = np.column_stack([np.asarray(columns[name], float) for name in self.objectives]) * self.signs
        violation = np.zeros(len(X))
        if "feasible" in columns:
            violation += ~np.asarray(columns["feasible"], bool)
        for metric, limit in self.constraints.items():
            violation += np.maximum(0.0, np.asarray(columns[metric], float) - limit) / max(abs(limit), 1e-300)
        for metric, limit in self.lower_bounds.items():
            violation += np.maximum(0.0, limit - np.asarray(columns[metric], float)) / max(abs(limit), 1e-300)
        violation[~np.isfinite(F).all(1)] += 1.0
        self.not_a_number += int(np.isnan(F).any(1).sum())
        violation[~np.isfinite(violation)] = 1.0
        self.record(X, F, violation)
        return F, violation

    def _checked(self, columns: Any, rows: int) -> dict:
        """The cost model's batch scores, refused in one line (naming the model, not the engine
        that asked) when they are not one array of ``rows`` numbers per metric the problem uses."""
        model = type(self.cost_model).__name__
        if not isinstance(columns, dict):
            raise OptmapError(f"cost model {model}: evaluate_batch returned {type(columns).__name__}, not a dict "
                              f"of one array per metric")
        used = (*self.objectives, *self.constraints, *self.lower_bounds)
        absent = [name for name in used if name not in columns]
        if absent:
            raise OptmapError(f"cost model {model}: evaluate_batch gave no '{absent[0]}', which the problem uses; "
                              f"it gave {', '.join(map(str, columns)) or 'nothing'}")
        for name in (*used, *(("feasible",) if "feasible" in columns else ())):
            if np.shape(columns[name]) != (rows,):
                raise OptmapError(f"cost model {model}: evaluate_batch's '{name}' has shape {np.shape(columns[name])} "
                                  f"for {rows} rows; give one value per row")
        return columns

    def _report(self, mapping) -> CostReport:
        """The cost model's full report of ``mapping``, refused in one line naming the model when it
        is not a CostReport with every metric the model declares."""
        model = type(self.cost_model).__name__
        report = self.cost_model.evaluate(mapping)
        if not isinstance(report, CostReport):
            raise OptmapError(f"cost model {model}: evaluate returned {type(report).__name__}, not an "
                              f"optmap.cost.CostReport")
        absent = [m for m in getattr(self.cost_model, "metrics", ()) if m not in report.metrics]
        if absent:
            raise OptmapError(f"cost model {model}: evaluate's report has no '{absent[0]}', which its metrics "
                              f"declare; report every declared metric (NaN where undefined)")
        return report

    def __call__(self, X: np.ndarray) -> np.ndarray:
        F, violation = self.evaluate(X)
        F = F.copy()
        F[violation > 0] = np.inf
        return F

    def record(self, X: np.ndarray, F: np.ndarray, violation: np.ndarray, count: int | None = None) -> None:
        """Take note of scored points (``count`` evaluations, default ``len(X)``).

        ``evaluate`` calls this; engines call it directly only for points scored elsewhere,
        e.g. trials another process added to a shared Optuna study.
        """
        self.evaluations += len(X) if count is None else count
        self.archive.add(X, F, violation <= 0)
        self.archive.note(self.evaluations, self.elapsed, force=self.exhausted and bool(self.history))
        if self.progress is not None:
            self.progress(self)

    # --- checkpoints and results ---------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Counters, best, front and history as JSON-friendly values (for checkpoints)."""
        return {"evaluations": self.evaluations, "seconds": self.elapsed, **self.archive.state()}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state`: the budget, elapsed time and history go on from there."""
        evaluations, seconds = int(state["evaluations"]), float(state["seconds"])
        if evaluations < 0 or not 0 <= seconds < float("inf"):
            raise ValueError(f"evaluations {evaluations} and seconds {seconds} cannot be a run's")
        self.evaluations = evaluations
        self.started = time.perf_counter() - seconds
        self.archive.restore(state)

    def result(self, engine: str, seed: int, stopped: str, extra: dict | None = None,
               with_report: bool = True) -> SearchResult:
        """The run's result: best mapping, its full report (unless ``with_report`` is false),
        front, history."""
        if self.history and self.history[-1].evaluations != self.evaluations:
            self.archive.note(self.evaluations, self.elapsed, force=True)
        best = report = None
        values: dict[str, float] = {}
        if self.best_x is not None:
            best = self.space.decode(self.best_x)
            report = self._report(best) if with_report else None
            values = dict(zip(self.objectives, map(float, self.best_f * self.signs)))
        front = [
            (self.space.decode(x), dict(zip(self.objectives, map(float, f * self.signs))))
            for x, f in zip(self.front_x, self.front_f)
        ]
        return SearchResult(
            engine=engine,
            seed=seed,
            objectives=self.objectives,
            best=best,
            values=values,
            report=report,
            front=front,
            history=list(self.history),
            evaluations=self.evaluations,
            seconds=self.elapsed,
            stopped=stopped,
            extra={**(extra or {}), **({"setup_seconds": round(self.setup_seconds, 3)} if self.setup_seconds >= 1e-3
                                        else {})},
            senses=self.senses,
            units={m: unit(self.cost_model, m) for m in getattr(self.cost_model, "metrics", ())},
        )
