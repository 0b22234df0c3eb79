"""A third-party formulation whose own repair maps many points to one mapping, lands off the
grid and is not idempotent (``tests/core/test_exhaustive_repair.py`` loads it with --plugin).

Decisions ``a``, ``b`` (integers 0..9) and ``c`` (x, y, z). The repair puts ``a`` in bins of
three at ``3k + 0.25`` (off the integer grid; repairing again keeps it) and shifts ``b`` by one,
modulo 10 (repairing again shifts it again): 4 bins x 10 x 3 = 120 mappings from 300 points.
"""

import numpy as np
from optmap.cost import BATCH, CostModel, CostReport
from optmap.hookspecs import hookimpl
from optmap.space import DesignSpace, categorical, integer


class LumpyRepair(CostModel):
    """f = (a - 4)^2 + 0.3 (b - 6.5)^2 + c, on the repaired decisions."""

    metrics = ("f",)
    capabilities = frozenset({BATCH})

    def __init__(self, workload, system) -> None:
        self.space = DesignSpace([integer("a", 0, 9), integer("b", 0, 9), categorical("c", ["x", "y", "z"])],
                                 repair=self.lump)
        self.scored: list[np.ndarray] = []

    @staticmethod
    def lump(X: np.ndarray) -> np.ndarray:
        X = X.copy()
        X[:, 0] = np.floor(X[:, 0] / 3) * 3 + 0.25
        X[:, 1] = (X[:, 1] + 1) % 10
        return X

    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        self.scored.append(np.array(X))
        return {"f": (X[:, 0] - 4.0) ** 2 + 0.3 * (X[:, 1] - 6.5) ** 2 + X[:, 2]}

    def evaluate(self, mapping) -> CostReport:
        return CostReport({"f": float(self.evaluate_batch(np.asarray(mapping.array, float)[None])["f"][0])})


@hookimpl
def optmap_register_cost_models(register):
    register("lumpy-repair", LumpyRepair)
