"""The ``dsm`` engine's per-layer tables: the best (core split, tiles) of every pass for every layer state.

A layer's cost depends on its neighbours only through its parallelism type, DySM factor and
whether its input and output stay in the scratchpads (:mod:`evaluation`), so for each such state
the engine scores the whole grid of core splits x tile levels of each pass in one vectorised call
(note §3.6) and keeps the minimum and its argument. Pruning (``prune = "paper"``, §II-E and note
§3.5): core splits of least work imbalance only ("if balanced configurations were not possible
... explore configurations that yield the least work imbalance"); and the tiles of a pass's
reduction dimension mapped on the PE array (in for FWD, out for BWD) at the smallest level offered,
which costs no traffic in an output-stationary loop and needs the least scratchpad. Where no
split pruning keeps fits the scratchpad, every split is scored instead, so pruning never makes a
feasible layer state infeasible. ``"none"`` scores every candidate of the design space.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np

from .layercost import LayerModel
from .passes import output_dims, tensor_size
from .splits import IN, OUT, TILED, imbalance

GRID_LIMIT = 1 << 21  # candidates per vectorised call (memory bound)
_SHARED: dict = {}  # tables of identical (layer, chip, torus, phase) across searches in one process
SHARED_LIMIT = 200_000
RELEVANT = {"fwd": np.array([True, True, True]), "bwd": np.array([True, True, True]),
            "upd": np.array([False, True, True])}  # UPD reads its input from HBM whatever the flags


@dataclass
class PassBest:
    """Best candidate of one pass for each residency combination (rows of ``combos``)."""

    combos: np.ndarray  # (R, 3) booleans: input kept, output kept, weights held
    total: np.ndarray  # (R,) seconds, inf if nothing fits
    split: np.ndarray  # (R,) row of the model's split table
    levels: np.ndarray  # (R, 4) tile levels (TILED order)
    per_step: np.ndarray  # (R,) seconds without the one-off terms (gradient, weights)


@dataclass
class Counter:
    scored: int = 0  # candidates scored
    calls: int = 0  # vectorised calls
    cached: int = 0  # tables found already scored


@dataclass
class TableBuilder:
    """Builds :class:`PassBest` tables for a model with a pruning rule, counting candidates scored."""

    model: object
    prune: str = "paper"
    counter: Counter = field(default_factory=Counter)
    cache: dict = field(default_factory=lambda: _SHARED)  # identical layers (repeated blocks) are scored once
    pins: dict = field(default_factory=dict)  # (layer, pass) -> {"split": row, TILED index: level} from [fix]

    @property
    def dtype(self):
        """float32 for the pruned (heuristic) search, float64 when the engine must be exact."""
        return np.float32 if self.prune == "paper" else np.float64

    def levels(self, lm: LayerModel, chip: list, pass_: str) -> list[np.ndarray]:
        """Tile levels worth scoring per TILED dimension (deeper ones repeat the smallest tile)."""
        p = (self.model.hw.array_rows, self.model.hw.array_cols, 1, 1, 1)
        out = []
        for k in TILED:
            needed = 1 + int(np.ceil(np.log2(max(1.0, np.ceil(float(np.max(chip[k])) / p[k])))))
            count = min(self.model.tile_levels, needed)
            reduced = k not in output_dims(lm.layer, pass_) and k in (IN, OUT)
            out.append(np.array([count - 1]) if self.prune == "paper" and reduced else np.arange(count))
        return out

    def splits(self, lm: LayerModel, chip: list, preloaded: bool, prune: str) -> np.ndarray:
        """Row indices of the split table to score for this ChipD.

        Preloaded weights are never replicated beyond need: such a layer only uses the splits that
        put the fewest weights on a core (the engine reserves exactly that much scratchpad).
        """
        rows = np.arange(len(self.model.splits))
        splits = self.model.splits.astype(float)
        if preloaded:
            core = [np.ceil(c / s) for c, s in zip(chip, splits.T)]
            weights = tensor_size(lm.layer, "K", core)
            rows = rows[weights <= weights.min()]
        if prune != "paper":
            return rows
        work = np.array([float(np.max(c)) for c in chip])
        waste = imbalance(work, self.model.splits[rows])
        return rows[waste <= waste.min() * (1 + 1e-9)]

    def best(self, lm: LayerModel, pass_: str, ptype: int, dysm: int, combos, *, preloaded=False, reserved=0.0,
             fork=False) -> PassBest:
        """Score the grid (residency combos x splits x tile levels) of one pass and keep the minima."""
        combos = np.asarray(combos, bool).reshape(-1, 3)
        pins = self.pins.get((lm.layer.name, pass_))
        same = replace(lm.layer, name="" if pins is None else lm.layer.name, producers=(), from_input=False)
        key = (same, lm.torus, lm.hw, lm.phase, self.prune, self.model.splits.tobytes(), self.model.tile_levels,
               pass_, int(ptype), int(dysm), combos.tobytes(), bool(np.any(preloaded)), float(reserved), bool(fork),
               tuple(sorted(pins.items(), key=str)) if pins else None)  # keys: "split" and TILED indices
        if key not in self.cache:
            if len(self.cache) >= SHARED_LIMIT:
                self.cache.clear()
            self.cache[key] = self._best(lm, pass_, ptype, dysm, combos, preloaded, reserved, fork)
        else:
            self.counter.cached += 1
        return self.cache[key]

    def _best(self, lm, pass_, ptype, dysm, combos, preloaded, reserved, fork) -> PassBest:
        projected = combos & RELEVANT[pass_]  # flags this pass depends on; score each distinct projection once
        keys = [tuple(row) for row in projected]
        distinct = list(dict.fromkeys(keys))
        if len(distinct) < len(combos):
            pb = self.best(lm, pass_, ptype, dysm, distinct, preloaded=preloaded, reserved=reserved, fork=fork)
            back = np.array([distinct.index(k) for k in keys])
            return PassBest(combos, pb.total[back], pb.split[back], pb.levels[back], pb.per_step[back])
        pb = self._grid(lm, pass_, ptype, dysm, combos, preloaded, reserved, fork, self.prune)
        if self.prune == "paper" and not np.all(np.isfinite(pb.total)):
            # no least-imbalance split fits the scratchpad: try every split rather than give up (the pruned
            # tile levels already need the least scratchpad)
            use = ~np.isfinite(pb.total)
            wide = self._grid(lm, pass_, ptype, dysm, combos[use], preloaded, reserved, fork, "none")
            for mine, theirs in ((pb.total, wide.total), (pb.split, wide.split), (pb.levels, wide.levels),
                                 (pb.per_step, wide.per_step)):
                mine[use] = theirs
        return pb

    def _grid(self, lm, pass_, ptype, dysm, combos, preloaded, reserved, fork, split_prune) -> PassBest:
        """The minima over the splits ``split_prune`` keeps and the tile levels of the engine's rule
        ([fix]ed values only where pinned)."""
        chip = lm.chip_work(ptype, dysm)
        rows = self.splits(lm, chip, bool(np.any(preloaded)), split_prune)
        levels = self.levels(lm, chip, pass_)
        pins = self.pins.get((lm.layer.name, pass_), {})
        if "split" in pins:
            rows = np.array([pins["split"]])
        levels = [np.array([pins[j]]) if j in pins else v for j, v in enumerate(levels)]
        n_combo = len(combos)
        grid = int(np.prod([len(v) for v in levels]))
        chunk = max(1, GRID_LIMIT // max(1, grid * n_combo))
        best_total = np.full(n_combo, np.inf)
        best_step = np.full(n_combo, np.inf)
        best_split = np.zeros(n_combo, np.int64)
        best_levels = np.zeros((n_combo, 4), np.int64)
        flag = [combos[:, j].reshape(-1, 1, 1, 1, 1, 1) for j in range(3)]
        lev = [v.astype(self.dtype).reshape([1, 1] + [-1 if i == j else 1 for i in range(4)]) for j, v in enumerate(levels)]
        for start in range(0, len(rows), chunk):
            part = rows[start:start + chunk]
            split = [self.model.splits[part, k].astype(self.dtype).reshape(1, -1, 1, 1, 1, 1) for k in range(5)]
            parts = lm.evaluate(pass_, ptype, dysm, split, lev, in_res=flag[0], out_res=flag[1], weights_res=flag[2],
                                preloaded=preloaded, reserved=reserved, fork=fork)
            total = np.broadcast_to(lm.total(parts), (n_combo, len(part)) + tuple(len(v) for v in levels))
            flat = total.reshape(n_combo, -1)
            arg = np.argmin(flat, axis=1)
            value = flat[np.arange(n_combo), arg]
            better = value < best_total
            if better.any():
                s, *lv = np.unravel_index(arg, total.shape[1:])
                once = np.broadcast_to(parts["gradient"] + parts["weights"], total.shape).reshape(n_combo, -1)
                best_total = np.where(better, value, best_total)
                best_step = np.where(better, value - once[np.arange(n_combo), arg], best_step)
                best_split = np.where(better, part[s], best_split)
                best_levels = np.where(better[:, None], np.stack([levels[j][lv[j]] for j in range(4)], 1), best_levels)
            self.counter.scored += flat.size
            self.counter.calls += 1
        return PassBest(combos, best_total, best_split, best_levels, best_step)


def residency_combos(can_in: bool, can_out: bool, can_hold: bool) -> list[tuple[bool, bool, bool]]:
    """Every (input kept, output kept, weights held) a layer may use."""
    return list(itertools.product((False, True) if can_in else (False,), (False, True) if can_out else (False,),
                                  (False, True) if can_hold else (False,)))
