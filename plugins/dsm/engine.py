"""The ``dsm`` engine: DSM's pruned enumeration (§II-E) per layer and pass, then a chain DP across layers.

1. Per layer, for every state (parallelism type, DySM factor, input kept, output kept), the best
   core split and tiles of each pass (:mod:`tables`).
2. Layers couple through relayouts and memory reuse only, so a min-plus DP over the series-parallel
   view (:func:`optmap.chain_dp.solve`, in :mod:`.planner`) finds the best states (note §3.6 "Viterbi/DP"). The output
   flag is part of the state, not a difference of two table entries: keeping an output can be the
   only way a layer fits its scratchpad (a resident tensor needs one copy, a streamed one two).
3. Around it, every on/off combination of the timestep-pipelining groups (each group solved
   exactly: the best per stage, then the best allocation of types by thresholds on the slowest
   stage), and, for inference with weight preloading, the paper's sweep (§III-B2): layers sorted
   by how much preloading saves them, prefixes that fill 0, 1/8, ..., all of the scratchpad.

Every assembled plan is scored by the evaluator, so the engine's answer is measured on the same
scale as any other engine's. With ``prune = "none"`` and no preload sweep it is an exact optimum of
the formulation (tested against ``exhaustive``); ``"paper"`` is the paper's heuristic, not exact.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine

from .model import DSM_TABLES, DSMCostModel
from .planner import grid_pins, pipe_combos, _Planner, preload_sets
from .plans import pinned_types
from .tables import TableBuilder


class DSMSearch(SearchEngine):
    """DeepSpatialMatrix: pruned enumeration of splits and tiles per layer and pass, then a chain DP."""

    requires = frozenset({DSM_TABLES})
    accepts = (DSMCostModel,)

    def __init__(self, *, prune: Literal["paper", "none"] = "paper", pin: dict[str, str] | None = None) -> None:
        """``prune = "paper"``: least-imbalance core splits and smallest reduction tiles (§II-E);
        ``"none"``: every candidate (exact, slower; except for the weight-preload sweep). ``pin``: parallelism types fixed per layer,
        in DSM's names or AccPar's (I = Data, III = Model; Type-II is rejected, see :mod:`plans`),
        e.g. a HyPar or AccPar plan to score with this model; the rest is optimised."""
        self.prune = prune
        self.pin = dict(pin or {})
        self.exact = prune == "none"

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = evaluator.cost_model
        fixed = evaluator.space.pinned  # [fix] / --fix
        types = {n.rsplit(":", 1)[0]: v for n, v in fixed.items() if n.endswith(":par")}
        clash = [n for n in types if n in self.pin and pinned_types(model, {n: self.pin[n]})[n] != types[n]]
        if clash:
            raise OptmapError(f"layer '{clash[0]}': [search.dsm] pin and [fix] give it different parallelism types")
        pinned = pinned_types(model, {**self.pin, **types})
        if any(v.preload is not None for v in model.vars.values()):
            self.exact = False  # the preload sweep tries prefixes of a sorted list, not every subset
        builder = TableBuilder(model, self.prune, pins=grid_pins(model, fixed))
        plans = []
        for reserved, preloaded in preload_sets(model, builder, fixed):
            planner = _Planner(model, builder, reserved, preloaded, fixed)
            for combo in pipe_combos(model, pinned, fixed):
                plans.append(planner.plan(combo, pinned))
        evaluator.expected = len(plans)  # progress counts to the plans found, not the search budget
        evaluator.evaluate(np.array(plans))
        return {"prune": self.prune, "candidates_scored": builder.counter.scored,
                "tables_reused": builder.counter.cached, "plans_scored": len(plans)}
