"""Exhaustive enumeration of a discrete design space, in vectorised chunks."""

from __future__ import annotations

import math

from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine


class ExhaustiveSearch(SearchEngine):
    """Evaluate every point of the design space (refuses spaces larger than max_size).

    Every distinct mapping is evaluated exactly once, also when the formulation's own repair
    maps many points to one (:meth:`optmap.space.DesignSpace.grid`), so its evaluation count is
    the number of distinct mappings, at most the space's size and ``max_size``, not the problem's
    evaluation budget (which sizes the other engines of a comparison). ``complete`` is true when
    it went through the whole space; the time budget and Ctrl-C still stop it, and then the
    result says it is incomplete.
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
        chunks = evaluator.space.grid(self.chunk)
        complete = True
        for X in chunks:
            evaluator.evaluate(X)
            seconds = evaluator.budget.seconds
            if evaluator.stop_requested or (seconds is not None and evaluator.elapsed >= seconds):
                complete = next(chunks, None) is None  # stopped after the last chunk: still complete
                break
        return {"space_size": int(size), "complete": complete}
