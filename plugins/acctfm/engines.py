"""AccTFM's native engines: Algorithm 1 (faithful or exact) and the Megatron-LM baseline plan.

Each engine builds its plan from the cost model's tables and hands it to the evaluator, so the
plan is scored by the problem's cost model like any generic engine's (one scale for comparisons).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from optmap.bounds import ints
from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine

from . import schedule
from .model import ACCTFM_TABLES, AccTFMCostModel


def _model(evaluator: Evaluator) -> AccTFMCostModel:
    model = evaluator.cost_model
    if not isinstance(model, AccTFMCostModel):
        raise OptmapError("this engine plans AccTFM's formulation; use [cost] model = \"acctfm\"")
    return model


class AccTFMSearch(SearchEngine):
    """AccTFM Algorithm 1: per-block micro-batch counts by a layer-wise DP, forward then backward."""

    requires = frozenset({ACCTFM_TABLES})
    accepts = (AccTFMCostModel,)

    def __init__(self, *, exact: bool = True, compression: Literal["best", "off"] = "best",
                 max_states: ints(1, 10**9) | None = None) -> None:
        """``exact = false`` runs Algorithm 1 as printed (one state per layer and K, note §2.5:
        a heuristic that can lose to a uniform schedule); ``exact = true`` (default) keeps every
        non-dominated state (P_K, M_1..M_K), which is exact because the recurrence is monotone.
        Forward and backward are solved separately (§4.2.2): their makespans add, so the pair of
        optima is the optimum. ``compression = "best"`` runs the DP for every compression
        setting the space allows and keeps the best; ``"off"`` plans without compression (the
        paper's pipeline-only ablation, Fig. 7). ``max_states`` caps each exact front (then a
        heuristic)."""
        if max_states is not None and max_states < 1:
            raise OptmapError(f"max_states must be >= 1, got {max_states}")
        self.method = "exact" if exact else "faithful"
        self.compression, self.max_states = compression, max_states
        # a proven optimum of the whole formulation only when every setting is solved exactly
        self.exact = exact and compression == "best" and max_states is None

    def _dp(self, tcp: np.ndarray, tcm: np.ndarray, ks: tuple[int, ...], slowdown: float) -> schedule.DPResult:
        if self.method == "faithful":
            return schedule.alg1(tcp, tcm, ks, slowdown)
        return schedule.exact_dp(tcp, tcm, ks, self.max_states, slowdown)

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = _model(evaluator)
        settings = model.settings() if self.compression == "best" else [model.off]
        plans, states = [], 0
        for setting in settings:
            tab = model.tables(setting)
            fwd = self._dp(tab.tcp_fwd, tab.tcm_fwd, tab.ks, tab.overlap_slowdown)
            k_bwd: tuple[int, ...] = (1,) * model.L
            if model.training:
                bwd = self._dp(tab.tcp_bwd[::-1], tab.tcm_bwd[::-1], tab.ks, tab.overlap_slowdown)  # §4.2.2: L..1
                k_bwd, states = bwd.ks[::-1], states + bwd.n_states
            states += fwd.n_states
            plans.append(model.plan_vector(fwd.ks, k_bwd, setting))
        evaluator.evaluate(np.array(plans))
        return {"method": self.method, "settings_planned": len(settings), "dp_states": states}


class MegatronPlan(SearchEngine):
    """Megatron-LM: every block one micro-batch (serial compute → All-Reduce), the paper's baseline."""

    requires = frozenset({ACCTFM_TABLES})
    accepts = (AccTFMCostModel,)
    exact = False

    def __init__(self, *, compression: Literal["off", "on"] = "off") -> None:
        """``compression = "on"`` applies the problem's allowed compression to the Megatron plan
        (the paper's compression-only ablation "CommC", Fig. 12)."""
        self.compression = compression

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = _model(evaluator)
        if 1 not in model.ks:
            raise OptmapError("the Megatron plan needs K = 1 among [cost] micro_batches")
        if self.compression == "on" and model.allowed == model.off:
            raise OptmapError("compression = \"on\" needs a compression setting: [cost] keep_ratio < 1 and/or bits")
        setting = model.allowed if self.compression == "on" else model.off
        ones = [1] * model.L
        evaluator.evaluate(model.plan_vector(ones, ones, setting)[None])
        return {}
