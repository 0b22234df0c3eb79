"""`Archive`: what a search has found so far — the best point, the Pareto front, the history.

Values are kept as the engine sees them: every objective minimised (a maximised objective enters
negated, see :class:`~optmap.search.Evaluator`); ``sign`` turns them back into metric values for
the history and the results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class HistoryPoint:
    """The best first-objective value (as a metric value) after ``evaluations`` evaluations and ``seconds``."""

    evaluations: int
    seconds: float
    best: float


def pareto_mask(F: np.ndarray) -> np.ndarray:
    """Rows of ``F`` not dominated by any other row (minimisation)."""
    le = (F[:, None, :] <= F[None, :, :]).all(-1)
    lt = (F[:, None, :] < F[None, :, :]).any(-1)
    dominated = (le & lt).any(0)
    return ~dominated


class Archive:
    """Best point, Pareto front (several objectives) and best-so-far history of one search."""

    def __init__(self, width: int, objectives: int, sign: float = 1.0) -> None:
        self.width, self.objectives, self.sign = width, objectives, sign
        self.best_x: np.ndarray | None = None
        self.best_f: np.ndarray | None = None
        self.front_x = np.empty((0, width))
        self.front_f = np.empty((0, objectives))
        self.history: list[HistoryPoint] = []

    @property
    def best_value(self) -> float:
        """The best first objective as a metric value (``inf`` / ``-inf`` before any feasible point)."""
        return self.sign * (float(self.best_f[0]) if self.best_f is not None else float("inf"))

    def add(self, X: np.ndarray, F: np.ndarray, feasible: np.ndarray) -> None:
        """Take note of scored points (only feasible ones can become best or join the front)."""
        if not feasible.any():
            return
        Xf, Ff = X[feasible], F[feasible]
        i = int(np.argmin(Ff[:, 0]))
        if self.best_f is None or Ff[i, 0] < self.best_f[0]:
            self.best_x, self.best_f = Xf[i].copy(), Ff[i].copy()
        if self.objectives > 1:
            allx, allf = np.vstack([self.front_x, Xf]), np.vstack([self.front_f, Ff])
            allf, unique = np.unique(allf, axis=0, return_index=True)
            keep = pareto_mask(allf)
            self.front_x, self.front_f = allx[unique][keep], allf[keep]

    def note(self, evaluations: int, seconds: float, force: bool = False) -> None:
        """Add a history point when the best improved (or ``force``)."""
        best = self.best_value
        if force or not self.history or self.sign * best < self.sign * self.history[-1].best:
            self.history.append(HistoryPoint(evaluations, seconds, best))

    def state(self) -> dict[str, Any]:
        """JSON-friendly values (for checkpoints)."""
        return {
            "best_x": None if self.best_x is None else self.best_x.tolist(),
            "best_f": None if self.best_f is None else self.best_f.tolist(),
            "front_x": self.front_x.tolist(),
            "front_f": self.front_f.tolist(),
            "history": [[h.evaluations, h.seconds, h.best] for h in self.history],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state`; a ValueError when its values cannot be a search's."""
        self.best_x = None if state["best_x"] is None else np.array(state["best_x"], float).reshape(self.width)
        self.best_f = None if state["best_f"] is None else np.array(state["best_f"], float).reshape(self.objectives)
        if self.best_f is not None and not np.isfinite(self.best_f).all():
            raise ValueError(f"the best values {self.best_f.tolist()} are not finite")
        self.front_x = np.array(state["front_x"], float).reshape(-1, self.width)
        self.front_f = np.array(state["front_f"], float).reshape(-1, self.objectives)
        self.history = [HistoryPoint(int(e), float(s), float(b)) for e, s, b in state["history"]]
