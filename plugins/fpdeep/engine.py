"""The ``fpdeep`` engine: FPDeep's balanced chain partition (§3.2–3.4, §4, note §3).

1. Coarse + fine phase and link check as one exact step: for the chosen splits, the unit
   boundaries that minimise the period — the slowest device's stage time with K×K-rounded tiles
   (and the FC layers' DRAM time), and the time each chain link needs for the traffic of its cut
   — by a bisection on the period with a greedy test (:func:`.partition.min_period_partition`).
   This is the "exact solution in polynomial time" the paper claims for a chain of layers; it
   replaces the coarse equal split, the paper's unspecified local repair (note §5.11) and the
   separate link check of note §3 step 5 (a cut a link cannot carry is never chosen).
2. Channel split of the cut layers: ICP (Type-II) everywhere first, as the paper prefers (§4.1);
   then, cut layer by cut layer, OCP (Type-III) where it scores better — e.g. AlexNet's
   3-channel conv1. Only layers where OCP may help are tried (:func:`ocp_candidates`): while the
   plan is compute-bound, those where OCP has more units to cut at; once a link binds, also
   those where OCP's cuts send less.
3. Resource check and parameter balancing (§3.4.2): a device over its BRAM parks just enough of
   its weights on devices with room; the balanced plan is kept unless holding the excess in DRAM
   scores better (a tie keeps balancing, the paper's preference).

With the "central" (2-D) reduction the links do not follow the cuts, so step 1 balances compute
only and the cost model checks the links. Every candidate is scored by the evaluator, so the
plan is the cost model's best one seen.
"""

from __future__ import annotations

import numpy as np

from optmap.errors import OptmapError
from optmap.search import Evaluator

from .layers import LayerTable
from .memory import FC_DRAM_PASSES, overflow_fraction
from .model import FPDeepCostModel
from .partition import min_period_partition
from .traffic import cut_traffic, unit_traffic


def ocp_candidates(table: LayerTable) -> tuple[np.ndarray, np.ndarray]:
    """Layers where OCP may beat ICP: (finer — more units to cut at, lighter — its worst cut
    inside the layer sends less, as when a pooling layer follows and OCP forwards pooled outputs
    where ICP forwards partial sums of the full map). Elsewhere OCP is coarser and sends more."""
    layers, ones = np.arange(len(table)), np.ones(len(table))
    icp_worst = cut_traffic(table, layers, ones, 0 * layers)  # ICP sends most just after a layer starts
    ocp_worst = cut_traffic(table, layers, table.units[:, 1] - 1, 0 * layers + 1)  # OCP just before it ends
    return table.units[:, 1] > table.units[:, 0], ocp_worst < icp_worst * (1 - 1e-12)


class FPDeepSearch:
    """FPDeep's mapping: exact balanced chain partition with link limits, ICP/OCP choice, parameter balancing."""

    requires = frozenset()
    exact = False  # the period is exact for fixed splits; the splits and the parking are greedy

    def __init__(self, *, split_sweeps: int = 2) -> None:
        """``split_sweeps``: rounds over the cut layers trying the other split (0: ICP only)."""
        if split_sweeps < 0:
            raise OptmapError(f"split_sweeps must be >= 0, got {split_sweeps}")
        self.split_sweeps = split_sweeps

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        model = evaluator.cost_model
        if not isinstance(model, FPDeepCostModel):
            raise OptmapError("engine 'fpdeep' plans FPDeep's formulation; use [cost] model = \"fpdeep\"")
        self.model, self.evaluator = model, evaluator
        finer, lighter = ocp_candidates(model.table)
        best = self._partitioned(np.zeros(len(model.table), int))  # ICP everywhere (§4.1)
        best_value, detail = self._score(best), self._detail(best)
        for _ in range(self.split_sweeps):
            improved = False
            for layer in self._cut_layers(detail):
                link_bound = detail["link_demand"][0] >= 1 - 1e-9
                if evaluator.exhausted or not (finer[layer] or (link_bound and lighter[layer])):
                    continue
                splits = self._splits(best)
                splits[layer] = 1 - splits[layer]
                candidate = self._partitioned(splits, hint=best_value)
                value = self._score(candidate)
                if value < best_value * (1 - 1e-12):
                    best, best_value, detail, improved = candidate, value, self._detail(candidate), True
            if not improved:
                break
        best, best_value = self._balance(best, best_value, detail)
        detail = self._detail(best)
        parked = detail["_detail"]["store"].parked[0]
        return {"period_us": best_value * 1e6, "cut_layers": len(self._cut_layers(detail)),
                "ocp_layers": int(self._splits(best).sum()), "parked_devices": int((parked > 0).sum()),
                "bound": "links" if detail["link_demand"][0] >= 1 - 1e-9 else "compute"}

    # --- helpers ------------------------------------------------------------------------------
    def _score(self, x: np.ndarray) -> float:
        return float(self.evaluator(x[None])[0, 0])

    def _splits(self, x: np.ndarray) -> np.ndarray:
        return np.rint(x[self.model._split_cols]).astype(int)

    def _detail(self, x: np.ndarray) -> dict:
        return self.model._evaluate(x[None])

    @staticmethod
    def _cut_layers(detail: dict) -> list[int]:
        """Layers that more than one device runs."""
        chan = detail["_detail"]["part"].chan[0]
        return [int(l) for l in np.flatnonzero((chan > 0).sum(0) > 1)]

    def _partitioned(self, splits: np.ndarray, hint: float | None = None) -> np.ndarray:
        m = self.model
        weights = m.table.weights_per_unit[np.arange(len(m.table)), splits]
        dram_per_unit = np.where(m.table.fc, FC_DRAM_PASSES * m.value_bytes * weights / m.fc_batch, 0.0)
        if m.reduction == "chain":  # values/s the link after each pipeline position carries
            link_rate = m.hop_capacity / m.value_bytes
        else:
            link_rate = np.full(len(m.rate), np.inf)
        bounds, _ = min_period_partition(m.table, splits, m.rate, m.budget, m.dram_rate, dram_per_unit,
                                         unit_traffic(m.table, splits), link_rate, hint)
        return m.vector(bounds, splits)

    def _balance(self, x: np.ndarray, value: float, detail: dict) -> tuple[np.ndarray, float]:
        m = self.model
        if not m._park_cols or self.evaluator.exhausted:
            return x, value
        fraction = overflow_fraction(detail["_detail"]["store"], m.bram)[0]
        if not (fraction > 0).any():
            return x, value
        balanced = x.copy()
        balanced[m._park_cols] = np.ceil(fraction * m.park_levels - 1e-9)
        balanced_value = self._score(balanced)
        return (balanced, balanced_value) if balanced_value <= value else (x, value)
