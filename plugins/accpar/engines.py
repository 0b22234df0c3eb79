"""AccPar's native engines: the layer-wise DP per level (AccPar, HyPar) and the fixed plans (OWT, DP).

Each engine builds a plan and hands it to the evaluator, so its plan is scored by the problem's
cost model and every comparison is on one scale (note §6.17).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine
from optmap.space import DesignSpace

from .model import LAYER_CHAIN_TABLES, AccParCostModel
from .plans import HYPAR_TYPES, batch_level_plans, fixed_states, level_plans
from .tables import TYPE_I, TYPE_II

def _model(evaluator: Evaluator) -> AccParCostModel:
    model = evaluator.cost_model
    if not isinstance(model, AccParCostModel):
        raise OptmapError("this engine plans AccPar's formulation; use [cost] model = \"accpar\"")
    return model


def pinned_states(model: AccParCostModel, space: DesignSpace) -> np.ndarray:
    """(levels, nodes, 3) mask of the states each node may take given the space's pinned decisions."""
    g = model.graph
    mask = np.ones((model.hierarchy.depth, len(g.names), 3), bool)
    for name, value in space.pinned.items():
        variable = space.variables[space.index(name)]
        level, node = variable.tag("level"), variable.tag("layer")
        if node is not None:
            i = g.names.index(node)
            mask[level, i] = False
            mask[level, i, variable.choices.index(value)] = True
    return mask


def pinned_shares(model: AccParCostModel, space: DesignSpace) -> dict[str, float]:
    """The heterogeneous shares the space pins, as fractions."""
    return {s.ratio: space.pinned[s.ratio] / model.ratio_steps for s in model.hierarchy.ratios
            if s.ratio in space.pinned}


def _share_grid(model: AccParCostModel) -> np.ndarray:
    return np.arange(1, model.ratio_steps) / model.ratio_steps


class AccParSearch(SearchEngine):
    """AccPar: DP over Type-I/II/III per level with compute + communication cost and a tuned share."""

    requires = frozenset({LAYER_CHAIN_TABLES})
    accepts = (AccParCostModel,)
    exact = False  # optimal per level for fixed shares; levels are solved one after another (§5.1)

    def __init__(self, *, ratio: Literal["search", "equal"] = "search", sweeps: ints(1, 100) = 2) -> None:
        """``ratio``: how the share of a heterogeneous split is chosen (note §3.4). "search" runs
        the DP for every share on the cost model's grid and keeps the plan it scores best (option
        c). Eq. 10 balances the two sides assuming costs linear in the share; where they are
        (compute only: 180/(180+420) = 0.3 for TPU-v2, network only: 1/3) the search finds the
        same share, and where they are not (Table 4 ignores the share, Table 5 is quadratic,
        note §6.3) the search is still right. "equal" splits 1/2. With several heterogeneous
        splits, "search" does ``sweeps`` rounds of coordinate descent."""
        self.ratio, self.sweeps = ratio, sweeps

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = _model(evaluator)
        pinned, fixed = pinned_states(model, evaluator.space), pinned_shares(model, evaluator.space)
        names = [s.ratio for s in model.hierarchy.ratios if s.ratio not in fixed]
        shares = {**{name: 0.5 for name in names}, **fixed}
        if self.ratio != "search" or not names:
            states, costs = level_plans(model, shares, pinned=pinned)
            evaluator.evaluate(model.plan_vector(states, shares)[None])
            return {"dp_level_costs": costs, "shares": shares}
        grid = _share_grid(model)
        for _ in range(self.sweeps if len(names) > 1 else 1):
            for name in names:
                trial = {**{k: np.full(len(grid), v) for k, v in shares.items()}, name: grid}
                states, _ = batch_level_plans(model, trial, pinned=pinned)
                candidates = [model.plan_vector(row, {k: float(v[i]) for k, v in trial.items()})
                              for i, row in enumerate(states)]
                F = evaluator(np.array(candidates))
                shares[name] = float(grid[int(np.argmin(F[:, 0]))])
        states, costs = level_plans(model, shares, pinned=pinned)
        return {"dp_level_costs": costs, "shares": shares}


class HyParSearch(SearchEngine):
    """HyPar: the same DP over Type-I/II only, communication amount as cost, equal split."""

    requires = frozenset({LAYER_CHAIN_TABLES})
    accepts = (AccParCostModel,)
    exact = False

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = _model(evaluator)
        shares = {**{s.ratio: 0.5 for s in model.hierarchy.ratios}, **pinned_shares(model, evaluator.space)}
        states, costs = level_plans(model, shares, types=HYPAR_TYPES, metric="comm_elements",
                                    pinned=pinned_states(model, evaluator.space))
        evaluator.evaluate(model.plan_vector(states, shares)[None])
        return {"dp_level_costs": costs}


class FixedPlan(SearchEngine):
    """A static plan applied at every level with an equal split: data parallelism or OWT."""

    accepts = (AccParCostModel,)
    exact = False
    conv_type = TYPE_I
    fc_type = TYPE_I

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = _model(evaluator)
        evaluator.evaluate(model.plan_vector(fixed_states(model, self.conv_type, self.fc_type))[None])
        return {}


class DataParallel(FixedPlan):
    """Data parallelism: every layer Type-I at every level, equal split (parameter-server DP)."""


class OneWeirdTrick(FixedPlan):
    """Krizhevsky's "one weird trick": CONV layers Type-I, FC layers Type-II, equal split."""

    fc_type = TYPE_II

