"""The cost-model contract: a formulation's design space and how a mapping of it is scored."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from optmap.space import DesignSpace, Mapping

# Capabilities a cost model may offer; engines that need one declare it in ``requires``.
BATCH = "batch"  # evaluate_batch(X) scores a whole population in one vectorised call
LAYER_CHAIN_TABLES = "layer_chain_tables"  # per-layer node and transition cost tables for DPs


@dataclass(frozen=True)
class LayerCost:
    """One row of a per-layer breakdown: seconds of compute and communication, and decisions."""

    name: str
    compute: float
    communication: float
    memory_bytes: float = 0.0
    decisions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CostReport:
    """What a cost model says of one mapping.

    ``metrics`` holds every scalar the model computes (SI units; ``time`` in seconds is the usual
    objective); ``plan`` is a JSON-friendly description of the decisions, for reports and files.
    """

    metrics: dict[str, float]
    feasible: bool = True
    reason: str = ""
    layers: tuple[LayerCost, ...] = ()
    plan: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "feasible": self.feasible,
            "reason": self.reason,
            "plan": self.plan,
            "layers": [
                {
                    "name": row.name,
                    "compute_s": row.compute,
                    "communication_s": row.communication,
                    "memory_bytes": row.memory_bytes,
                    **row.decisions,
                }
                for row in self.layers
            ],
        }


@runtime_checkable
class CostModel(Protocol):
    """A formulation: decisions (``space``) and their scoring.

    Optional: ``evaluate_batch(X) -> dict[str, np.ndarray]`` (one array of length N per metric,
    plus an optional boolean ``"feasible"``) when ``BATCH`` is in ``capabilities``; named plans
    (``plans() -> dict[str, Mapping]``) that engines may seed searches with.
    """

    space: DesignSpace
    metrics: tuple[str, ...]
    capabilities: frozenset[str]

    def evaluate(self, mapping: Mapping) -> CostReport: ...


def evaluate_batch(model: CostModel, X: np.ndarray) -> dict[str, np.ndarray]:
    """Score the rows of ``X`` with the model's vectorised evaluator, or one by one."""
    if BATCH in model.capabilities:
        return model.evaluate_batch(X)
    reports = [model.evaluate(model.space.decode(x)) for x in X]
    columns = {m: np.array([r.metrics.get(m, np.nan) for r in reports]) for m in model.metrics}
    columns["feasible"] = np.array([r.feasible for r in reports])
    return columns
