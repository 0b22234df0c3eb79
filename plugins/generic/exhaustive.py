"""Exhaustive enumeration of a discrete design space, in vectorised chunks."""

from __future__ import annotations

import math

from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine


class ExhaustiveSearch(SearchEngine):
    """Evaluate every point of the design space (refuses spaces larger than max_size).

    Its evaluation count is the space's size, bounded by ``max_size``, not by the problem's
    evaluation budget (which sizes the other engines of a comparison); the time budget and
    Ctrl-C still stop it, and then the result says it is incomplete.
    """

    exact = True

    def __init__(self, *, max_size: ints(1, 10**12) = 10_000_000, chunk: ints(1, 10**7) = 65_536) -> None:
        if max_size < 1 or chunk < 1:
            raise OptmapError("max_size and chunk must be >= 1")
        self.max_size = max_size
        self.chunk = chunk

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        size = evaluator.space.size
        if size > self.max_size:
            shown = f"{size:.4g}" if math.isfinite(size) else "more than 1e308"
            raise OptmapError(
                f"the design space has {shown} points, more than max_size = {self.max_size:,}; "
                "use ga, optuna, random or a native engine, or raise [search.exhaustive] max_size"
            )
        evaluator.expected = int(size)
        evaluator.prepare(int(size))
        for X in evaluator.space.grid(self.chunk):
            evaluator.evaluate(X)
            seconds = evaluator.budget.seconds
            if evaluator.stop_requested or (seconds is not None and evaluator.elapsed >= seconds):
                break
        return {"space_size": int(size), "complete": evaluator.evaluations >= size}
