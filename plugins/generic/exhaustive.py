"""Exhaustive enumeration of a discrete design space, in vectorised chunks."""

from __future__ import annotations

from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine


class ExhaustiveSearch(SearchEngine):
    """Evaluate every point of the design space (refuses spaces larger than max_size)."""

    exact = True

    def __init__(self, *, max_size: int = 10_000_000, chunk: int = 65_536) -> None:
        if max_size < 1 or chunk < 1:
            raise OptmapError("max_size and chunk must be >= 1")
        self.max_size = max_size
        self.chunk = chunk

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        size = evaluator.space.size
        if size > self.max_size:
            raise OptmapError(
                f"the design space has {size:.4g} points, more than max_size = {self.max_size:,}; "
                "use ga, optuna, random or a native engine, or raise [search.exhaustive] max_size"
            )
        for X in evaluator.space.grid(self.chunk):
            evaluator.evaluate(X)
            if evaluator.stop_requested:
                break
        return {"space_size": int(size), "complete": evaluator.evaluations >= size}
