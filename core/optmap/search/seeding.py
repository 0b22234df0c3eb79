"""Named plans to start a search from: another engine's answer, or a plan the cost model names.

A name is looked up first among the cost model's own plans (optional hook ``plans() ->
dict[str, Mapping]``), then among the problem's search engines: that engine runs on a child
evaluator (what is left of the budget) and its best mapping (and Pareto front) become seeds.
Its evaluations count towards the run's budget and history, so a seeded search is never
credited with work it did not pay for.
"""

from __future__ import annotations

import numpy as np
from optmap.errors import OptmapError
from optmap.search.evaluator import Evaluator


def seed_vectors(evaluator: Evaluator, names: list[str], seed: int) -> np.ndarray:
    """Space vectors of the plans ``names`` (an (n, space.width) array, duplicates removed)."""
    rows: list[np.ndarray] = []
    own = evaluator.cost_model.plans() if hasattr(evaluator.cost_model, "plans") else {}
    for name in names:
        if name in own:
            rows.append(np.asarray(own[name].array, float))
            continue
        try:
            engine = evaluator.make_engine(name)
        except OptmapError as exc:
            raise OptmapError(f"seed_plans: {exc}") from None
        child = evaluator.child()
        engine.search(child, seed)
        evaluator.merge(child)
        if child.best_x is None:
            raise OptmapError(f"seed_plans: engine '{name}' found no feasible plan to seed with")
        rows.append(child.best_x)
        rows.extend(child.front_x)
    if not rows:
        return np.empty((0, evaluator.space.width))
    X = evaluator.space.repair(np.array(rows))
    _, first = np.unique(X, axis=0, return_index=True)
    return X[np.sort(first)]
