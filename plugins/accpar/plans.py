"""AccPar's plans without search: the layer-wise DP per level (Eq. 9, §5.1) and the fixed plans.

Functions of the level arithmetic (:class:`~.levels.LevelCosts`, the half of the AccPar cost
model that prices one bisection level) that return states (levels, nodes); the engines score
them, and the cost model names them as plans to start a generic search from
(:meth:`~.model.AccParCostModel.plans`). They need the levels, not the cost model, so the model
may use them without the two modules importing each other.
"""

from __future__ import annotations

import numpy as np

from .levels import LevelCosts
from .tables import ROWS, TYPE_I, TYPE_II, WEIGHTED

ALL_TYPES = (0, 1, 2)
HYPAR_TYPES = (TYPE_I, TYPE_II)  # HyPar partitions by batch or by model only


def level_plans(
    model: LevelCosts,
    shares: dict[str, float],
    types: tuple[int, ...] = ALL_TYPES,
    metric: str | None = None,
    pinned: np.ndarray | None = None,
) -> tuple[np.ndarray, list[float]]:
    """Run the layer-wise DP (Eq. 9, §5.2 for multi-path blocks) level after level (§5.1).

    Returns the states (levels, nodes) and each level's DP cost. Weighted layers may take only
    ``types``; merge nodes take any layout; ``pinned`` (:func:`pinned_states`) narrows both to the
    user's fixed decisions. Ties go to the lowest type index, as in the authors' reference program.
    """
    states, costs = batch_level_plans(model, {k: np.array([v], float) for k, v in shares.items()}, types, metric,
                                      pinned)
    return states[0], costs[0].tolist()


def batch_level_plans(
    model: LevelCosts,
    shares: dict[str, np.ndarray],
    types: tuple[int, ...] = ALL_TYPES,
    metric: str | None = None,
    pinned: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`level_plans` for B share settings at once (``shares``: name → (B,) values): states
    (B, levels, nodes) and DP costs (B, levels), row b equal to ``level_plans`` at row b's shares.

    Each level's tables are computed for all rows in one pass from the tensor sizes the level
    above left (carried down, not recomputed from the root), and solved by one batched DP.
    """
    g = model.graph
    batch = max((len(v) for v in shares.values()), default=1)
    columns = {k: np.broadcast_to(np.asarray(v, float).reshape(-1, 1), (batch, 1)) for k, v in shares.items()}
    allowed = np.zeros((len(g.names), 3), bool)
    allowed[g.role == WEIGHTED] = [state in types for state in range(3)]
    allowed[g.role != WEIGHTED] = True
    solver = model.chain_dp()
    depth = model.hierarchy.depth
    states = np.zeros((batch, depth, len(g.names)), int)
    costs = np.zeros((batch, depth))
    classes = model.root_classes()
    for level in range(depth):
        node, edge = model.level_tables(level, classes, columns, metric or model.dp_metric)
        level_allowed = allowed if pinned is None else allowed & pinned[level]
        if pinned is not None and not level_allowed.any(1).all():  # a pin outside ``types``: the pin wins
            level_allowed = pinned[level]
        # tables of one row (a level the shares do not reach) are solved once, for every row
        costs[:, level], states[:, level] = solver.solve(np.where(level_allowed, node, np.inf), edge)
        if level + 1 < depth:
            classes = model.descend(level, classes, states[:, level], columns)
    return states, costs


def fixed_states(model: LevelCosts, conv_type: int = TYPE_I, fc_type: int = TYPE_I) -> np.ndarray:
    """A static plan at every level (levels, nodes): CONV layers ``conv_type``, FC layers
    ``fc_type``; merge nodes of residual blocks keep batch-split tensors, like the Type-I layers
    around them."""
    g = model.graph
    row = np.array([(fc_type if kind == "linear" else conv_type) if role == WEIGHTED else ROWS
                    for kind, role in zip(g.kind, g.role)])
    return np.tile(row, (model.hierarchy.depth, 1))
