"""The search contract: engines call an :class:`Evaluator`, which keeps count, budget and history.

Every engine, generic or native, scores mappings through the evaluator of one problem, so the
best mapping, the number of evaluations and the best-so-far history are measured the same way
for all of them, and a comparison is always on one scale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from optmap.checkpoint import Checkpoint
from optmap.cost import CostModel, CostReport, evaluate_batch
from optmap.errors import OptmapError
from optmap.space import Mapping


@dataclass(frozen=True)
class Budget:
    """How much an engine may spend; ``None`` means no limit on that axis."""

    evaluations: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.evaluations is not None and self.evaluations < 1:
            raise OptmapError(f"budget.evaluations must be >= 1, got {self.evaluations}")
        if self.seconds is not None and self.seconds <= 0:
            raise OptmapError(f"budget.seconds must be > 0, got {self.seconds}")


@dataclass(frozen=True)
class HistoryPoint:
    """The best first-objective value after ``evaluations`` evaluations and ``seconds``."""

    evaluations: int
    seconds: float
    best: float


@dataclass
class SearchResult:
    """What one engine run found, with the measurements needed to compare engines."""

    engine: str
    seed: int
    objectives: tuple[str, ...]
    best: Mapping | None
    values: dict[str, float]
    report: CostReport | None
    front: list[tuple[Mapping, dict[str, float]]]
    history: list[HistoryPoint]
    evaluations: int
    seconds: float
    stopped: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "seed": self.seed,
            "objectives": list(self.objectives),
            "values": self.values,
            "mapping": self.best.as_dict() if self.best else None,
            "report": self.report.to_json() if self.report else None,
            "front": [{"mapping": m.as_dict(), "values": v} for m, v in self.front],
            "history": [[h.evaluations, h.seconds, h.best] for h in self.history],
            "evaluations": self.evaluations,
            "seconds": self.seconds,
            "stopped": self.stopped,
            "extra": self.extra,
        }


def pareto_mask(F: np.ndarray) -> np.ndarray:
    """Rows of ``F`` not dominated by any other row (minimisation)."""
    le = (F[:, None, :] <= F[None, :, :]).all(-1)
    lt = (F[:, None, :] < F[None, :, :]).any(-1)
    dominated = (le & lt).any(0)
    return ~dominated


class Evaluator:
    """Scores mappings for engines; counts evaluations, enforces the budget, keeps history.

    ``evaluate(X)`` returns ``(F, violation)``: the objective values (N, k) and a non-negative
    constraint violation (0 = feasible). ``__call__(X)`` returns F with ``inf`` for infeasible
    rows, for engines without constraint handling.

    Besides scoring, it carries what an engine needs to know about its run: ``checkpoint`` (where
    a resumable engine saves and finds its state, :mod:`optmap.checkpoint`) and ``make_engine``
    (builds another engine of the same problem by name, e.g. to seed a search with its plan).
    ``state()``/``restore()`` turn the counters, best, front and history into JSON and back, so
    a resumed run continues the same budget and history.
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
    ) -> None:
        self.cost_model = cost_model
        self.space = cost_model.space
        self.objectives = tuple(objectives)
        self.constraints = dict(constraints or {})
        self.budget = budget
        self.progress = progress
        self._batch = batch_evaluate or (lambda X: evaluate_batch(cost_model, X))
        self.evaluations = 0
        self.started = time.perf_counter()
        self.stop_requested = False
        self.stop_signal: int | None = None  # the signal that asked to stop, if any
        self.checkpoint = checkpoint or Checkpoint()
        self._make_engine = make_engine
        self.best_x: np.ndarray | None = None
        self.best_f: np.ndarray | None = None
        self.front_x = np.empty((0, len(self.space)))
        self.front_f = np.empty((0, len(self.objectives)))
        self.history: list[HistoryPoint] = []

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

    def make_engine(self, name: str):
        """Another engine of this run's problem, built with the problem's options for it."""
        if self._make_engine is None:
            raise OptmapError(f"cannot build engine '{name}' here: run the search through optmap.solve")
        return self._make_engine(name)

    def child(self) -> "Evaluator":
        """A fresh evaluator of the same problem with what is left of this one's budget.

        For a sub-search (e.g. the engine whose plan seeds a GA); :meth:`merge` then counts its
        evaluations here.
        """
        b = self.budget
        left = Budget(
            evaluations=None if b.evaluations is None else max(1, b.evaluations - self.evaluations),
            seconds=None if b.seconds is None else max(1e-3, b.seconds - self.elapsed),
        )
        return Evaluator(self.cost_model, self.objectives, self.constraints, left,
                         batch_evaluate=self._batch, make_engine=self._make_engine)

    def merge(self, other: "Evaluator") -> None:
        """Count ``other``'s evaluations as this evaluator's; its best and front join this run's."""
        rows = [] if other.best_x is None else [(other.best_x, other.best_f)]
        rows += list(zip(other.front_x, other.front_f))
        X = np.array([x for x, _ in rows]).reshape(len(rows), len(self.space))
        F = np.array([f for _, f in rows]).reshape(len(rows), len(self.objectives))
        self.record(X, F, np.zeros(len(rows)), count=other.evaluations)

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = np.atleast_2d(np.asarray(X, float))
        if len(X) == 0:
            return np.empty((0, len(self.objectives))), np.empty(0)
        columns = self._batch(X)
        F = np.column_stack([np.asarray(columns[name], float) for name in self.objectives])
        violation = np.zeros(len(X))
        if "feasible" in columns:
            violation += ~np.asarray(columns["feasible"], bool)
        for metric, limit in self.constraints.items():
            violation += np.maximum(0.0, np.asarray(columns[metric], float) - limit) / max(abs(limit), 1e-300)
        violation[~np.isfinite(F).all(1)] += 1.0
        self.record(X, F, violation)
        return F, violation

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
        feasible = violation <= 0
        if feasible.any():
            Xf, Ff = X[feasible], F[feasible]
            i = int(np.argmin(Ff[:, 0]))
            if self.best_f is None or Ff[i, 0] < self.best_f[0]:
                self.best_x, self.best_f = Xf[i].copy(), Ff[i].copy()
            if len(self.objectives) > 1:
                self._update_front(Xf, Ff)
        best = float(self.best_f[0]) if self.best_f is not None else float("inf")
        if not self.history or best < self.history[-1].best or self.exhausted:
            self.history.append(HistoryPoint(self.evaluations, self.elapsed, best))
        if self.progress is not None:
            self.progress(self)

    def _update_front(self, X: np.ndarray, F: np.ndarray) -> None:
        allx = np.vstack([self.front_x, X])
        allf = np.vstack([self.front_f, F])
        allf, unique = np.unique(allf, axis=0, return_index=True)
        allx = allx[unique]
        keep = pareto_mask(allf)
        self.front_x, self.front_f = allx[keep], allf[keep]

    def state(self) -> dict[str, Any]:
        """Counters, best, front and history as JSON-friendly values (for checkpoints)."""
        return {
            "evaluations": self.evaluations,
            "seconds": self.elapsed,
            "best_x": None if self.best_x is None else self.best_x.tolist(),
            "best_f": None if self.best_f is None else self.best_f.tolist(),
            "front_x": self.front_x.tolist(),
            "front_f": self.front_f.tolist(),
            "history": [[h.evaluations, h.seconds, h.best] for h in self.history],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state`: the budget, elapsed time and history go on from there."""
        self.evaluations = int(state["evaluations"])
        self.started = time.perf_counter() - float(state["seconds"])
        self.best_x = None if state["best_x"] is None else np.array(state["best_x"], float)
        self.best_f = None if state["best_f"] is None else np.array(state["best_f"], float)
        self.front_x = np.array(state["front_x"], float).reshape(-1, len(self.space))
        self.front_f = np.array(state["front_f"], float).reshape(-1, len(self.objectives))
        self.history = [HistoryPoint(int(e), float(s), float(b)) for e, s, b in state["history"]]

    def result(self, engine: str, seed: int, stopped: str, extra: dict | None = None) -> SearchResult:
        """The run's result: best mapping, its full report, front, history."""
        if self.history and self.history[-1].evaluations != self.evaluations:
            last = self.history[-1]
            self.history.append(HistoryPoint(self.evaluations, self.elapsed, last.best))
        best = report = None
        values: dict[str, float] = {}
        if self.best_x is not None:
            best = self.space.decode(self.best_x)
            report = self.cost_model.evaluate(best)
            values = dict(zip(self.objectives, map(float, self.best_f)))
        front = [
            (self.space.decode(x), dict(zip(self.objectives, map(float, f))))
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
            extra=dict(extra or {}),
        )


@runtime_checkable
class SearchEngine(Protocol):
    """A search method. ``requires`` names the cost-model capabilities it needs.

    ``search(evaluator, seed)`` explores ``evaluator.space`` by calling the evaluator (which keeps
    the best and the history), stops when ``evaluator.exhausted``, and returns a dict of extra
    facts for the result (or None). ``exact`` is True when the engine's answer is a proven
    optimum of the formulation, so comparisons can report the gap to it. ``resumable`` is True
    when the engine saves its state through ``evaluator.checkpoint`` and continues from
    ``evaluator.checkpoint.engine_state`` (ga, optuna); only such engines accept ``--resume``.
    """

    requires: frozenset[str]

    def search(self, evaluator: Evaluator, seed: int) -> dict | None: ...
