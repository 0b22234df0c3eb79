"""Uniform random sampling of the design space, a batch at a time."""

from __future__ import annotations

import numpy as np
from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine


class RandomSearch(SearchEngine):
    """Sample mappings uniformly at random until the budget is spent."""

    exact = False

    def __init__(self, *, batch: ints(1, 10**7) = 1024, evaluations: ints(1, 10**12) = 10_000) -> None:
        if batch < 1 or evaluations < 1:
            raise OptmapError("batch and evaluations must be >= 1")
        self.batch = batch
        self.evaluations = evaluations  # used when the problem's budget sets no evaluation limit

    def search(self, evaluator: Evaluator, seed: int) -> None:
        rng = np.random.default_rng(seed)
        limit = evaluator.budget.evaluations or self.evaluations
        if evaluator.space.size <= 1:  # every decision pinned: one point to score
            limit = 1
        evaluator.prepare(limit - evaluator.evaluations)
        while not evaluator.exhausted and evaluator.evaluations < limit:
            n = min(self.batch, limit - evaluator.evaluations)
            evaluator.evaluate(evaluator.space.sample(rng, n))
