"""The ``dsm`` cost model: DeepSpatialMatrix's design space and bandwidth-centric performance model (DSM §II-III).

Formulation (the design space, per primary layer, note §3): ``<layer>:par`` the parallelism type
(Data, Model and, with ``hybrid``, DataXModelY / ModelXDataY; shared by the passes, note §7.8);
per pass (fwd, bwd, upd) ``<layer>:<pass>:split`` the core split (factors over in, out, ij, kij,
mb that multiply to the cores per chip) and ``<layer>:<pass>:<dim>`` the tile level of the PE
array's ArrayD for in, out, ij, mb (tile = CoreD halved ``level`` times, rounded up to P). With
``mem_opt``: ``<layer>:reuse`` (keep the main input in the scratchpads, §III-B1) and, for LSTMs in
training, ``<layer>:wreuse`` (weights on chip across timesteps, §III-B2); with ``dysm``:
``<layer>:dysm`` the DySM factor (§III-C); with ``weight_preload`` (inference):
``<layer>:preload`` and, for LSTMs, ``<layer>:wreuse``; with ``timestep_pipelining``:
``tp:<first layer>`` per run of LSTMs (§III-D).

The machine-wide toggles ``hybrid``, ``mem_opt``, ``dysm``, ``timestep_pipelining`` and
``weight_preload`` only add decisions, so switching one on never makes the best plan slower.
Scoring is :mod:`evaluation` (vectorised over rows), the per-layer arithmetic :mod:`layercost`.

Metrics: ``time`` (s per minibatch, training step or inference), ``throughput`` (samples/s),
``utilization`` (useful FLOPs / time / peak, the paper's metric), and the Fig. 13 categories in
seconds (``mac`` ... ``pipeline``, summing to ``time``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

import numpy as np

from optmap.bounds import MAX_BATCH, MAX_DIMENSION, ints
from optmap.cost import BATCH, CostModel, CostReport
from optmap.errors import OptmapError
from optmap.space import DesignSpace, Mapping, categorical, integer
from optmap.system import System
from optmap.workload import Workload

from .chip import chip_config
from .chipcomm import BASE_PTYPES, PTYPES
from .layercost import CATEGORIES, LayerModel, Phase
from .layers import build_graph
from .pipelining import in_runs, pipe_runs
from .plans import named_plans
from .splits import DIMS, explicit_splits, factorizations, label
from .torus import Torus

DSM_TABLES = "dsm_tables"  # capability of this model that the native engine needs
TILE_DIMS = ("in", "out", "ij", "mb")
NO_YES = ("N", "Y")


@dataclass(frozen=True)
class LayerVars:
    """Column indices of one layer's variables (None where the layer has no such decision)."""

    par: int
    reuse: int | None
    wreuse: int | None
    dysm: int | None
    preload: int | None
    split: dict[str, int]
    tiles: dict[str, tuple[int, int, int, int]]


class DSMCostModel(CostModel):
    """DeepSpatialMatrix (IBM): per layer and pass, parallelism, core and PE-array splits, reuse, DySM, pipelining."""

    capabilities = frozenset({BATCH, DSM_TABLES})
    metrics = ("time", "throughput", "utilization", *CATEGORIES, "memory_bytes")
    senses = {"throughput": "max", "utilization": "max"}
    units = {"throughput": "samples/s", "utilization": "fraction of peak", **{c: "s" for c in CATEGORIES}}
    default_engine = "dsm"
    topologies = ("dsm-torus", "torus2d")  # :class:`Torus` reads the shape and the links' bandwidths
    formulation = "DeepSpatialMatrix (cost model dsm)"

    def __init__(
        self,
        workload: Workload,
        system: System,
        *,
        hybrid: bool = True,
        mem_opt: bool = True,
        dysm: bool = True,
        timestep_pipelining: bool = True,
        weight_preload: bool = True,
        dysm_factors: tuple[ints(1, MAX_BATCH), ...] = (1, 2, 4, 8),
        tile_levels: ints(1, 32) = 6,
        core_split_dims: tuple[Literal["in", "out", "ij", "kij", "mb"], ...] = DIMS,
        core_splits: list[dict[str, ints(1, MAX_DIMENSION)]] | None = None,
        array_load_cycles: ints(0, MAX_DIMENSION) | None = None,
        skip_first_bwd: bool = True,
        bwd_rotation: Literal["exposed", "overlapped"] = "exposed",
        gradient_staging: Literal["links", "memory"] = "links",
    ) -> None:
        """Options (defaults: the paper's full DSM; every open point a named choice, note §7):

        ``hybrid`` DataXModelY / ModelXDataY allowed (§III-A); ``mem_opt`` activation/error reuse
        across layers and, in training, LSTM weights held across timesteps (§III-B); ``dysm``
        spatial minibatches (training, non-recurrent layers) with factors ``dysm_factors``;
        ``timestep_pipelining`` LSTM pipe groups (§III-D); ``weight_preload`` (inference) weights
        preloaded into the scratchpads, and LSTM weights held across timesteps (the paper's
        inference bars put weight residency there, §V-A2). ``tile_levels`` halvings of CoreD
        offered for each tile (level 0 = whole CoreD). ``core_split_dims`` the dimensions cores
        may split (all five, 126 splits of 32 cores) or ``core_splits`` an explicit list of
        splits such as ``[{ij = 32}, {in = 4, out = 8}]`` (each must multiply to the cores per
        chip). ``array_load_cycles`` cycles to load a block into the PE array, hidden by a stream
        at least that long (default: the array's rows). ``skip_first_bwd``: layers fed by the
        network input compute no input error. ``bwd_rotation``: the BWD pass's rotation of partial
        outputs is not overlapped with compute (Fig. 5, default) or is (as Fig. 13 draws it, note §7.10).
        ``gradient_staging``: the gradient reduction streams received pieces over the links and the
        ring, HBM reading each partial and writing each new weight once (Fig. 5 lists no memory bus
        for it, default), or stages them in HBM (Fig. 13's "memory-bound", note §7.9).
        """
        if len(system.kinds()) != 1:
            raise OptmapError("the dsm cost model needs one kind of chip on the torus; the system mixes "
                              f"{', '.join(a.name for a in system.kinds())}")
        hw = chip_config(system.devices[0])
        self.hw = replace(hw, element_bytes=workload.bytes_per_element)
        self.workload, self.system = workload, system
        self.torus = Torus.of(system)
        self.training = workload.phase == "training"
        loads = hw.array_rows if array_load_cycles is None else array_load_cycles
        self.phase = Phase(self.training, workload.batch, loads, skip_first_bwd, bwd_rotation == "overlapped",
                           gradient_staging)
        self.graph = build_graph(workload)
        self.toggles = dict(hybrid=hybrid, mem_opt=mem_opt, dysm=dysm, timestep_pipelining=timestep_pipelining,
                            weight_preload=weight_preload)
        if self.torus.chips == 1:
            self.ptypes: tuple[str, ...] = ("Data",)
        else:
            self.ptypes = PTYPES if hybrid else BASE_PTYPES
        factors = tuple(sorted(set(int(f) for f in dysm_factors) | {1}))
        self.factors = factors if dysm and self.training else (1,)
        if core_splits is not None:
            self.splits = explicit_splits(core_splits, hw.cores)
        else:
            self.splits = factorizations(hw.cores, tuple(dict.fromkeys(core_split_dims)))
        self.split_labels = tuple(label(s) for s in self.splits)
        self.tile_levels = int(tile_levels)
        self.models = {layer.name: LayerModel(layer, self.hw, self.torus, self.phase) for layer in self.graph.layers}
        rows = self.torus.n if self.torus.chips > 1 else 0
        self.runs = pipe_runs(self.graph, rows) if timestep_pipelining else ()
        self.run_of = in_runs(self.runs)
        self.stage_models = {
            name: LayerModel(replace(self.graph.layer(name), timesteps=1), self.hw, self.torus.sub(r), self.phase)
            for run in self.runs for name, r in zip(run.layers, run.rows)}
        self.space, self.vars, self.tp_vars = self._space()

    # --- the design space ---------------------------------------------------------------------
    def _space(self):
        variables: list = []
        layer_vars: dict[str, LayerVars] = {}

        def add(var) -> int:
            variables.append(var)
            return len(variables) - 1

        mem_opt, preload = self.toggles["mem_opt"], self.toggles["weight_preload"]
        for layer in self.graph.layers:
            name, model = layer.name, self.models[layer.name]
            par = add(categorical(f"{name}:par", self.ptypes, layer=name))
            reuse = add(categorical(f"{name}:reuse", NO_YES, layer=name)) if (
                mem_opt and self.graph.reuse_producer(name)) else None
            holds = mem_opt if self.training else preload
            wreuse = add(categorical(f"{name}:wreuse", NO_YES, layer=name)) if holds and layer.recurrent else None
            dysm = add(categorical(f"{name}:dysm", self.factors, layer=name)) if (
                len(self.factors) > 1 and not layer.recurrent) else None
            pre = add(categorical(f"{name}:preload", NO_YES, layer=name)) if (
                preload and not self.training and layer.shared_kernel) else None
            split, tiles = {}, {}
            for pass_ in model.passes:
                split[pass_] = add(categorical(f"{name}:{pass_}:split", self.split_labels, layer=name, pass_=pass_))
                tiles[pass_] = tuple(add(integer(f"{name}:{pass_}:{d}", 0, self.tile_levels - 1, layer=name,
                                                 pass_=pass_)) for d in TILE_DIMS)
            layer_vars[name] = LayerVars(par, reuse, wreuse, dysm, pre, split, tiles)
        tp_vars = {run.name: add(categorical(f"tp:{run.name}", NO_YES, run=run.name)) for run in self.runs}
        return DesignSpace(tuple(variables)), layer_vars, tp_vars

    @cached_property
    def ptype_index(self) -> np.ndarray:
        """Choice index of ``<layer>:par`` -> index into :data:`PTYPES` (what the arithmetic uses)."""
        return np.array([PTYPES.index(p) for p in self.ptypes])

    @property
    def peak_flops(self) -> float:
        return self.hw.peak_flops * self.torus.chips

    @cached_property
    def useful_flops(self) -> float:
        """FLOPs of every pass the model runs (2 per MAC; note §4.4k)."""
        return sum(2.0 * m.macs * len(m.passes) for m in self.models.values())

    # --- scoring ------------------------------------------------------------------------------
    def evaluate_batch(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Score every row of ``X`` in one vectorised pass per layer and pass."""
        from .evaluation import score

        return score(self, np.atleast_2d(np.asarray(X, float)))

    def evaluate(self, mapping: Mapping) -> CostReport:
        from .report import report

        return report(self, mapping)

    def plans(self) -> dict[str, Mapping]:
        """Named plans for engines to start from: the AccPar/HyPar/OWT-style parallelism patterns (:mod:`plans`)."""
        return named_plans(self)
