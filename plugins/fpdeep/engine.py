"""The ``fpdeep`` engine: FPDeep's balanced chain partition (§3.2–3.4, §4, note §3).

1. Coarse + fine phase and link check as one exact step: for the chosen splits, the unit
   boundaries that minimise the period — the slowest device's stage time with K×K-rounded tiles
   and its DRAM time (FC weights, and whatever exceeds its BRAM when nothing is parked), and the
   time each chain link needs for the traffic of its cut — by a bisection on the period with a
   greedy test (:func:`.partition.min_period_partition`).
   This is the "exact solution in polynomial time" the paper claims for a chain of layers; it
   replaces the coarse equal split, the paper's unspecified local repair (note §5.11) and the
   separate link check of note §3 step 5 (a cut a link cannot carry is never chosen).
2. Channel split of the cut layers: three starts — ICP (Type-II) everywhere, as the paper
   prefers (§4.1); OCP (Type-III) where it has more units to cut at (e.g. AlexNet's 3-channel
   conv1); OCP also where its cuts send less (:func:`ocp_candidates`) — then, cut layer by cut
   layer, the other split where it scores better: while the plan is compute-bound only where
   OCP is finer, once a link binds also where it is lighter. A flip is tried only if step 1
   without memory limits, a lower bound, can beat the plan.
3. Resource check and parameter balancing (§3.4.2), for every candidate of step 2: a device over
   its BRAM parks just enough of its weights on devices with room (the cost model places them).
   The same partition holding the excess in DRAM is scored after it and kept only if strictly
   better (parked weights load the links): a tie keeps balancing, the paper's preference
   (abstract: "it is preferable to store excess weights in neighboring devices rather than in
   local off-chip memory").
4. Memory repair: step 1 is exact when nothing is parked; parking couples neighbouring devices.
   Step 1 with BRAM ignored bounds every parking or fall-back from below; when the plan does not
   reach that bound, memory costs time, and a local search moves park levels and cuts near the
   devices involved (:meth:`FPDeepSearch._repair`), keeping improving moves.

With the "central" (2-D) reduction the links do not follow the cuts, so step 1 balances compute
only, the cost model checks the links, and step 4 (whose test needs step 1's link limits) is
skipped. Every candidate is scored by the evaluator, so the plan is the cost model's best one
seen. The engine plans for the period (throughput); the problem's first objective chooses among
its candidates. Pinned splits (``[fix]``, ``--fix split:<layer>=III``) are kept; other pinned
decisions are imposed by the evaluator on the engine's plans.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from annotated_types import Ge, Le

from optmap.errors import OptmapError
from optmap.search import Evaluator, SearchEngine

from .layers import SPLITS, LayerTable
from .memory import overflow_fraction
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


class FPDeepSearch(SearchEngine):
    """FPDeep's mapping: exact balanced chain partition with link limits, ICP/OCP choice, parameter balancing."""

    accepts = (FPDeepCostModel,)
    exact = False  # the period is exact for fixed splits without parking; splits and parking are greedy

    def __init__(self, *, split_sweeps: Annotated[int, Ge(0), Le(100)] = 2,
                 repair_rounds: Annotated[int, Ge(0), Le(100_000)] = 50) -> None:
        """``split_sweeps``: rounds over the cut layers trying the other split (0: ICP only);
        ``repair_rounds``: rounds of the memory repair (step 4; 0: none)."""
        if split_sweeps < 0 or repair_rounds < 0:
            raise OptmapError("split_sweeps and repair_rounds must be >= 0")
        self.split_sweeps, self.repair_rounds = split_sweeps, repair_rounds

    def search(self, evaluator: Evaluator, seed: int) -> dict:
        """Plans for the period (throughput); candidates are kept by the problem's first objective."""
        model = evaluator.cost_model
        self.model, self.evaluator = model, evaluator
        finer, lighter = ocp_candidates(model.table)
        pinned = evaluator.space.pinned  # decisions fixed by [fix] / --fix: splits are kept as pinned
        fixed = np.array([f"split:{name}" in pinned for name in model.table.names])
        pins = np.array([SPLITS.index(pinned.get(f"split:{name}", SPLITS[0])) for name in model.table.names])
        finer, lighter = finer & ~fixed, lighter & ~fixed
        best, best_value = None, np.inf
        for start in (0 * finer, finer, finer | lighter):  # ICP everywhere (§4.1), then OCP where it may help
            start = np.where(fixed, pins, start.astype(int))
            if best is not None and (start == self._splits(best)).all():
                continue
            x, value = self._candidate(start)
            if best is None or value < best_value - 1e-12 * abs(best_value):
                best, best_value = x, value
        detail = self._detail(best)
        for _ in range(self.split_sweeps):
            improved = False
            for layer in self._cut_layers(detail):
                link_bound = detail["link_demand"][0] >= 1 - 1e-9
                if evaluator.exhausted or not (finer[layer] or (link_bound and lighter[layer])):
                    continue
                splits = self._splits(best)
                splits[layer] = 1 - splits[layer]
                period = float(detail["period"][0])
                if self._partition(splits, below=period * (1 - 1e-9), memory=False) is None:
                    continue  # not even without memory limits can these splits beat the plan
                x, value = self._candidate(splits, hint=period)
                if value < best_value - 1e-9 * abs(best_value):
                    best, best_value, detail, improved = x, value, self._detail(x), True
            if not improved:
                break
        repairs, period = 0, float(detail["period"][0])
        if model.reduction == "chain" and self._partition(self._splits(best), below=period * (1 - 1e-9),
                                                           memory=False) is not None:
            best, best_value, repairs = self._repair(best, best_value)  # memory costs time: repair
        detail = self._detail(best)
        parked = detail["_detail"]["store"].parked[0]
        return {"cut_layers": len(self._cut_layers(detail)), "ocp_layers": int(self._splits(best).sum()),
                "parked_devices": int((parked > 0).sum()), "repairs": repairs}

    # --- helpers ------------------------------------------------------------------------------
    def _score(self, x: np.ndarray) -> float:
        return float(self.evaluator(x[None])[0, 0])

    def _splits(self, x: np.ndarray) -> np.ndarray:
        return np.rint(x[self.model.split_columns]).astype(int)

    def _detail(self, x: np.ndarray) -> dict:
        """The model's detail of ``x`` as the evaluator scores it (pins and repair applied)."""
        return self.model.scored(self.evaluator.space.repair(x[None]))

    @staticmethod
    def _cut_layers(detail: dict) -> list[int]:
        """Layers that more than one device runs."""
        chan = detail["_detail"]["part"].chan[0]
        return [int(l) for l in np.flatnonzero((chan > 0).sum(0) > 1)]

    def _partition(self, splits: np.ndarray, hint: float | None = None, below: float | None = None,
                   memory: bool = True):
        """Step 1 for ``splits`` and step 3's parking: the plan's vector and the partition's period,
        or None when no partition is faster than ``below``. ``memory = False`` ignores BRAM, a
        lower bound on every plan with these splits (parking and fall-backs only add time)."""
        m, costs = self.model, self.model.unit_costs
        if m.reduction == "chain":  # values/s the link after each pipeline position carries
            link_rate = m.hop_capacity / m.value_bytes
        else:
            link_rate = np.full(len(m.rate), np.inf)
        devices = {"rate": m.rate, "budget": m.budget, "bram": m.bram, "dram_rate": m.dram_rate, "link_rate": link_rate}
        if not memory:
            devices["bram"] = np.full(len(m.rate), np.inf)
        per_unit = {"bram": costs.weights + costs.activations, "bram_fixed": costs.activations_fixed,
                    "dram": costs.fc_dram}
        found = min_period_partition(m.table, splits, devices, per_unit, unit_traffic(m.table, splits), hint, below)
        if found is None:
            return None
        return m.vector(found[0], splits), found[1]

    def _candidate(self, splits: np.ndarray, hint: float | None = None) -> tuple[np.ndarray, float]:
        """Steps 1 and 3 for ``splits``: the partition with parameter balancing where a device
        overflows, and the same partition holding the excess in DRAM; balancing is scored first,
        so a tie keeps it."""
        m = self.model
        x, _ = self._partition(splits, hint)
        if m.park_columns:  # park just enough of every overflowing device's weights
            fraction = overflow_fraction(self._detail(x)["_detail"]["store"], m.bram)[0]
            if (fraction > 0).any():
                balanced = x.copy()
                balanced[m.park_columns] = np.ceil(fraction * m.park_levels - 1e-9)
                value = self._score(balanced)
                if self.evaluator.exhausted:
                    return balanced, value
                spill = self._score(x)
                return (balanced, value) if value <= spill else (x, spill)
        return x, self._score(x)

    def _repair(self, x: np.ndarray, value: float) -> tuple[np.ndarray, float, int]:
        """Step 4: where memory binds, local moves around the devices it touches.

        Step 1 is exact without parking; parking couples devices, so near every device that
        spills, parks or hosts, each park level moves by one and each cut by one or two units;
        the best improving move is kept, round after round, all candidates of a round scored in
        one batch.
        """
        m, moves = self.model, 0
        for _ in range(self.repair_rounds):
            if self.evaluator.exhausted:
                break
            d = self._detail(x)["_detail"]
            store, part = d["store"], d["part"]
            touched = (store.spill + store.unplaced + store.parked + store.hosted)[0] > 0
            near = np.flatnonzero(np.convolve(touched, np.ones(3), mode="same") > 0)
            if not len(near):
                break
            bounds, splits = part.bounds[0], part.splits[0]
            park = x[m.park_columns] if m.park_columns else None
            candidates = []
            for j in near:
                for step in (-1, 1):
                    if park is not None and 0 <= park[j] + step <= m.park_levels:
                        trial = x.copy()
                        trial[m.park_columns[j]] += step
                        candidates.append(trial)
                for cut in (j, j + 1):
                    for step in (-2, -1, 1, 2):
                        if 0 < cut < len(bounds) - 1 and bounds[cut - 1] <= bounds[cut] + step <= bounds[cut + 1]:
                            moved = bounds.copy()
                            moved[cut] += step
                            candidates.append(m.vector(moved, splits, park))
            left = self.evaluator.remaining_evaluations
            candidates = candidates[:left] if left is not None else candidates
            if not candidates:
                break
            values = self.evaluator(np.array(candidates))[:, 0]
            k = int(np.argmin(values))
            if values[k] >= value - 1e-12 * abs(value):
                break
            x, value, moves = candidates[k], float(values[k]), moves + 1
        return x, value, moves
