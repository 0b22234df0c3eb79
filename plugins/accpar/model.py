"""The AccPar cost model: per level and layer a partition type, scored as AccPar §4 and Eq. 9.

Decisions (the design space): for every bisection level and every node of the workload's block
view, a state — the partition type (I, II, III) of a weighted layer, or the layout (batch,
channel, replicated) of a merge node of a multi-path block — and, for each split between
different accelerator kinds, the share of the first side on a grid of ``ratio_steps`` steps.

Scoring, level by level (note §3.2): every sub-array class of the level is cut in two; each side
fetches its intra-layer partial sums (Table 4) and inter-layer conversions (Table 5, from
``tables``), divided by a bandwidth (``bandwidth`` option, note §6.1); per node and per edge the
slowest side sets the pace (the synchronous critical path, note §6.2); each side's tensors then
shrink by its share along the dimension its type splits (§3.2 SHRINK). Level costs add (the
reference program's rule, note §6.6). Computation is counted once, at the leaves: a leaf's share
of every layer's Table 6 FLOPs over its FLOP/s (Eq. 8). A leaf whose accelerator carries a
measured calibration is priced instead by the shared compute model on the shard it computes
(:class:`optmap.compute.step.StepModel`: the layer's passes, the element-wise layers it owns,
its weights' optimizer traffic; the step's host dispatch and launch gaps by
:meth:`~optmap.compute.step.StepModel.step_seconds`); ``compute =
"peak"`` keeps Eq. 8 everywhere. Compute and communication add (Eq. 9) unless ``overlap`` is set.

``mode = "comm_only"`` reproduces the authors' reference program: no computation, equal shares,
and costs in communicated elements (metric ``comm_elements``) per level summed over levels.
"""

from __future__ import annotations

import functools
import sys
from typing import Literal

import numpy as np

from optmap.bounds import ints
from optmap.compute import calibration_of
from optmap.compute.layout import MemoryFormat
from optmap.compute.optimizer import Optimizer
from optmap.cost import BATCH, CostModel, CostReport, LayerCost
from optmap.errors import OptmapError
from optmap.space import DesignSpace, Mapping, categorical, integer
from optmap.system import System
from optmap.workload import Workload

from .dp import ChainDP
from .graph import block_graph
from .hierarchy import Hierarchy, bisect
from .network import OPTIONS, REASON, TOPOLOGIES, split_networks
from .levels import Decisions, Dims, LevelCosts
from .plans import HYPAR_TYPES, fixed_states, level_plans
from .tables import LAYOUT_NAMES, TYPE_II, TYPE_NAMES, WEIGHTED, state_tables, table6_flops


# Elements of one (rows, nodes + edges) array in a numpy scoring pass; sets the rows per pass.
CHUNK_ELEMENTS = 1 << 16

# Plans from which a batch is scored by the compiled kernel (kernel.py). Below it numpy scores
# it: importing numba and loading the kernel cost about 0.4-0.6 s per process, which a batch of
# a few hundred plans does not repay; and the one-plan scoring of the DP engines and of the
# quickstart stays free of it. Once a process has loaded the kernel (a large batch, or
# :meth:`AccParCostModel.prepare`), every batch goes there: on hetero-vgg19 it scores 16 plans
# at 130,000/s, 100 at 370,000/s, numpy 10,000/s and 44,000/s. Same bits either way
# (tests/plugins/accpar/test_accpar_kernel.py).
KERNEL_ROWS = 256

# Capability of this cost model that the layer-wise DP engines need: per-level node and
# transition cost tables (``chain_tables``) over the block view.
LAYER_CHAIN_TABLES = "layer_chain_tables"


class AccParCostModel(LevelCosts, CostModel):
    """AccPar (HPCA 2020): heterogeneous tensor partitioning, Type-I/II/III per level and layer."""

    formulation = "AccPar's formulation ([cost] model = \"accpar\")"
    capabilities = frozenset({BATCH, LAYER_CHAIN_TABLES})
    default_engine = "accpar"
    topologies, system_options, topology_reason = TOPOLOGIES, OPTIONS, REASON  # network.py

    def __init__(
        self,
        workload: Workload,
        system: System,
        *,
        mode: Literal["time", "comm_only"] = "time",
        bandwidth: Literal["accessor", "remote", "min"] = "accessor",
        combine: Literal["max", "sum"] = "max",
        flops: Literal["table6", "2mac"] = "table6",
        overlap: bool = False,
        share_scaling: Literal["tables", "linear"] = "tables",
        ratio_steps: ints(2, 1000) = 60,
        check_memory: bool = True,
        weight_copies: ints(1, 64) = 3,
        compute: Literal["auto", "peak"] = "auto",
        optimizer: Optimizer = "sgd",
        memory_format: MemoryFormat = "contiguous",
    ) -> None:
        """Options (note §6 decisions): ``bandwidth`` divides a side's transfer by its own network
        bandwidth (Eq. 7, b_i), its partner's (Fig. 2 text, b_j) or the smaller; ``combine`` takes
        the slower side per node and edge ("max", synchronous) or adds both sides ("sum", one
        shared link); ``flops`` counts Table 6 (2P-1 per output) or 2·MACs per product;
        ``overlap`` takes max(compute, comm) instead of Eq. 9's sum; ``share_scaling`` (note
        §6.3): "tables" evaluates each side's true amounts at its share (Table 4 does not shrink
        with it, Table 5 is quadratic), "linear" takes §5.3 literally — a side's communication,
        at its split and in its whole sub-array below, is its equal-split amount scaled by
        share / (1/2), as Eq. 10 assumes; ``ratio_steps`` is the grid
        of the heterogeneous share (60 makes 0.3 and 1/3 exact); ``check_memory`` marks a mapping
        infeasible when a leaf's weights × ``weight_copies`` (weights, gradients, optimizer state)
        plus stored activations exceed its memory (the paper does not check capacity, §6.8);
        ``compute``: "auto" prices a leaf with a measured accelerator by the shared compute model
        (module docstring), "peak" keeps Eq. 8 (FLOPs over peak) for every accelerator;
        ``optimizer`` (sgd, momentum, adam) sets the weight-update traffic the measured model adds;
        ``memory_format`` ("contiguous": NCHW, PyTorch's default, adds cuDNN's layout transforms
        around the convolutions; "channels_last") is the measured model's activation layout."""
        if workload.phase != "training":
            raise OptmapError("accpar models training (forward, backward, gradient); set [workload] phase = \"training\"")
        if ratio_steps < 2:
            raise OptmapError(f"ratio_steps must be >= 2, got {ratio_steps}")
        self.workload, self.system = workload, system
        self.mode, self.bandwidth, self.combine = mode, bandwidth, combine
        self.overlap, self.ratio_steps, self.share_scaling = overlap, ratio_steps, share_scaling
        self.check_memory, self.weight_copies = check_memory, weight_copies
        for kind in system.kinds():
            kind.flops_per_s(workload.dtype)  # an accelerator without a rate for the dtype: refused at load
        self.graph = block_graph(workload)
        self.state_tables = state_tables(self.graph.role, self.graph.kernel, self.graph.s_in, self.graph.s_out)
        self._chain_dp: ChainDP | None = None
        self._every_state: Decisions | None = None
        measured = compute == "auto" and any(calibration_of(g.accelerator) for g in system.groups)
        self.step = None  # the shared compute model of measured accelerators (module docstring)
        if measured:
            from optmap.compute.step import StepModel

            self.step = StepModel.from_workload(workload, self.graph.names, optimizer=optimizer,
                                                memory_format=memory_format)
        self.hierarchy: Hierarchy = bisect(system)
        self.networks = split_networks(system, [s for level in self.hierarchy.splits for s in level])
        self.bytes = workload.bytes_per_element
        self.seconds = {(s.level, s.parent): self._split_seconds(s) for level in self.hierarchy.splits for s in level}
        if mode == "comm_only" and self.hierarchy.ratios:
            raise OptmapError("accpar mode = \"comm_only\" follows the reference program, which assumes one accelerator kind")
        g, batch = self.graph, float(workload.batch)
        per_sample = g.flops_2mac * batch
        self.layer_flops = table6_flops(batch, g.d_in, g.d_out, g.kernel, g.s_in, g.s_out) if flops == "table6" else per_sample
        self.layer_flops = np.where(g.role == WEIGHTED, self.layer_flops, 0.0)
        self.metrics = ("comm_elements", "comm_bytes") if mode == "comm_only" else (
            "time", "compute_time", "comm_time", "comm_elements", "comm_bytes", "memory_bytes")
        self.dp_metric = "comm_elements" if mode == "comm_only" else "time"
        self.space = self._space()
        self._state_columns = np.array(
            [[self.space.index(self.variable(h, n)) for n in g.names] for h in range(self.hierarchy.depth)], int
        )
        assert np.array_equal(self._state_columns.ravel(), np.arange(self._state_columns.size)), "states first (_decode)"
        self._ratio_columns = {s.ratio: self.space.index(s.ratio) for s in self.hierarchy.ratios}

    # --- the design space ---------------------------------------------------------------------
    @staticmethod
    def variable(level: int, node: str) -> str:
        return f"L{level}:{node}"

    def _space(self) -> DesignSpace:
        g = self.graph
        variables = [
            categorical(self.variable(h, name), TYPE_NAMES if role == WEIGHTED else LAYOUT_NAMES, level=h, layer=name)
            for h in range(self.hierarchy.depth)
            for name, role in zip(g.names, g.role)
        ]
        # a share is step k of ratio_steps; --fix takes k or the share k / ratio_steps as results print it
        variables += [integer(s.ratio, 1, self.ratio_steps - 1, level=s.level, step=1 / self.ratio_steps)
                      for s in self.hierarchy.ratios]
        return DesignSpace(tuple(variables))

    def plans(self) -> dict[str, Mapping]:
        """Named plans at equal shares, found without scoring anything: data parallelism and
        Krizhevsky's OWT at every level, and the layer DP per level with AccPar's cost (time) and
        with HyPar's (communicated elements, Type-I/II only). Generic engines may start from
        them (``seed_plans``; optuna does by default)."""
        equal = {s.ratio: 0.5 for s in self.hierarchy.ratios}
        states = {
            "data-parallel": fixed_states(self),
            "one-weird-trick": fixed_states(self, fc_type=TYPE_II),
            "layer-dp": level_plans(self, equal)[0],
            "hypar-dp": level_plans(self, equal, types=HYPAR_TYPES, metric="comm_elements")[0],
        }
        return {name: self.space.decode(self.plan_vector(plan, equal)) for name, plan in states.items()}

    def plan_vector(self, states: np.ndarray, shares: dict[str, float] | None = None) -> np.ndarray:
        """A space vector from (levels, nodes) states and shares (default: equal split)."""
        x = np.zeros(self.space.width)
        x[self._state_columns.ravel()] = np.asarray(states).ravel()
        for name, column in self._ratio_columns.items():
            share = (shares or {}).get(name, 0.5)
            x[column] = min(self.ratio_steps - 1, max(1, round(share * self.ratio_steps)))
        return x

    # --- whole-plan evaluation ----------------------------------------------------------------
    def _decode(self, X: np.ndarray):
        # the space lists the states first, level by level (_space): a slice, as int32 (faster indices)
        states = X[:, :self._state_columns.size].reshape(len(X), *self._state_columns.shape).astype(np.int32)
        shares = {name: X[:, [col]] / self.ratio_steps for name, col in self._ratio_columns.items()}
        return states, shares

    def _evaluate(self, X: np.ndarray, detail: bool = False) -> dict:
        """Scores of every row of X, through numpy; ``detail`` adds each level's costs, each node's
        and edge's seconds, the states and the shares (for one plan's report)."""
        states, shares = self._decode(np.atleast_2d(X))
        n = len(states)
        comm_elements, comm_time, leaves, extra = self._levels(states, shares, detail)
        out = {"comm_elements": comm_elements, "comm_bytes": comm_elements * self.bytes}
        if detail:
            out.update(extra, states=states, shares=shares)
        return self._totals(out, comm_time, n, leaves=leaves, detail=detail)

    def _levels(self, states: np.ndarray, shares: dict, detail: bool):
        """Level by level: communicated elements and seconds per plan summed over levels, the
        leaves' (Dims, sub-array), and with ``detail`` the per-level and per-node/edge costs."""
        g, n = self.graph, len(states)
        per_level = {"comm_elements": [], "comm_time": []}
        node_time, edge_time = (np.zeros((n, len(g.names))), np.zeros((n, len(g.edge_u)))) if detail else (None, None)
        classes = [self.root]
        leaves: list[tuple[Dims, object]] = []
        for h, level_splits in enumerate(self.hierarchy.splits):
            state = states[:, h, :]
            decided = self._decisions(state, state[:, g.edge_u], state[:, g.edge_v])
            level = None  # node elements, edge elements, node seconds, edge seconds
            next_classes: list = [None] * len(self.hierarchy.classes[h + 1])
            for split in level_splits:
                dims, share = classes[split.parent], self._shares(split, shares)
                combined = self._level(split, dims, share, decided)
                # sub-arrays of a level run in parallel: the slowest sets each node's and edge's pace
                level = combined if level is None else [np.maximum(a, b, out=a) for a, b in zip(level, combined)]
                for child, child_dims in zip(split.children, self._shrink(split, dims, share, decided)):
                    next_classes[child] = child_dims
            level_node, level_edge = (level[0], level[2]), (level[1], level[3])
            per_level["comm_elements"].append(level_node[0].sum(1) + level_edge[0].sum(1))
            per_level["comm_time"].append(level_node[1].sum(1) + level_edge[1].sum(1))
            if detail:
                node_time += level_node[1]
                edge_time += level_edge[1]
            leaves += [(classes[i], sub) for sub, level, i in self.hierarchy.leaves if level == h]
            classes = next_classes
        leaves += [(classes[i], sub) for sub, level, i in self.hierarchy.leaves if level == self.hierarchy.depth]
        # levels added one after another: np.sum over a stacked axis would add them pairwise for a
        # single plan and in turn for several, so a plan's score would depend on its batch
        totals = [functools.reduce(np.add, per_level[m]) if per_level[m] else np.zeros(n)
                  for m in ("comm_elements", "comm_time")]
        return *totals, leaves, {"per_level": per_level, "node_time": node_time, "edge_time": edge_time}

    def _totals(self, out: dict, comm_time: np.ndarray, n: int, leaves=None, costs=None, detail: bool = False) -> dict:
        """``out`` (communicated elements and bytes) with compute, memory and Eq. 9's time: from the
        ``leaves`` (Dims, sub-array), or ``costs`` already summed (compute seconds, memory, fits)."""
        if self.mode == "comm_only":
            return out
        if costs is None:
            compute, memory, fits, stepped = self._leaf_costs(leaves, n)
            compute_time = compute.sum(1) if self.step is None else np.maximum(compute.sum(1), stepped)
        else:
            compute_time, memory, fits = costs
        compute_time = np.broadcast_to(compute_time, n)
        out.update(
            time=np.maximum(compute_time, comm_time) if self.overlap else compute_time + comm_time,
            compute_time=compute_time,
            comm_time=comm_time,
            memory_bytes=memory,
            feasible=fits,
        )
        if detail:
            out["layer_compute"] = np.broadcast_to(compute, (n, len(self.graph.names)))
        return out

    def _leaf_costs(self, leaves, n: int):
        """Per-layer compute time (slowest leaf), peak memory per device, whether it fits, and the
        step time of the measured leaves (their slowest passes through the host/device recurrence
        of :meth:`~optmap.compute.step.StepModel.step_seconds`; 0 without). The compute time keeps
        one row (1, nodes) while every plan's leaves hold the same share (no heterogeneous split)."""
        g, dtype = self.graph, self.workload.dtype
        compute = np.zeros((1, len(g.names)))
        memory = np.zeros(n)
        fits = np.ones(n, bool)
        passes, measured = None, []
        for dims, sub in leaves:
            (kind, _), = sub.members
            if self.step is not None and calibration_of(kind) is not None:  # the shard this leaf computes
                shard = self.step.pass_seconds(kind, dims.batch, dims.d_in, dims.d_out)
                compute = np.maximum(compute, sum(shard))
                passes = shard if passes is None else tuple(np.maximum(a, b) for a, b in zip(passes, shard))
                measured.append(kind)
            else:
                share = np.reshape(dims.share, (-1, 1))  # (1, 1), or one per plan (n, 1)
                compute = np.maximum(compute, share * self.layer_flops / kind.flops_per_s(dtype))  # Eq. 8 at the leaf
            weights = (dims.d_in * dims.d_out * g.kernel).sum(-1)  # per plan, or one for all (1,)
            stored = (dims.batch * dims.d_in * g.s_in).sum(-1)
            need = self.bytes * (self.weight_copies * weights + stored)
            memory = np.maximum(memory, need)
            if self.check_memory:
                fits &= need <= kind.memory_bytes
        stepped = np.zeros(n)
        for kind in dict.fromkeys(measured):
            stepped = np.maximum(stepped, self.step.step_seconds(kind, *passes))
        return compute, memory, fits, stepped

    def level_costs(self, X: np.ndarray, metric: str = "comm_time") -> np.ndarray:
        """Each level's own cost (``comm_time`` or ``comm_elements``) for every row: (N, levels)."""
        return np.column_stack(self._evaluate(X, detail=True)["per_level"][metric])

    @property
    def chunk_rows(self) -> int:
        """Rows scored per pass: enough that one (rows, nodes + edges) array of float64 fills
        about :data:`CHUNK_ELEMENTS` (512 KB, a core's L2 cache here). Each pass pays a fixed
        Python cost per level and split; measured on VGG-19 and ResNet-50, 2^16 beat 2^15 (that
        cost halved) and 2^17 (the arrays a level makes no longer stay in cache, ResNet-50)."""
        per_row = len(self.graph.names) + len(self.graph.edge_u)
        return int(min(4096, max(64, CHUNK_ELEMENTS // max(1, per_row))))

    def prepare(self, rows: int | None = None) -> None:
        """Load the compiled kernel before a search's clock starts, when the search will score
        :data:`KERNEL_ROWS` plans or more (``rows``; None: unknown)."""
        if rows is None or rows >= KERNEL_ROWS:
            self.evaluate_batch(np.tile(self.space.lower, (KERNEL_ROWS, 1)))

    def evaluate_batch(self, X: np.ndarray, chunk: int | None = None) -> dict[str, np.ndarray]:
        """Score every row of X, ``chunk`` rows per pass. A batch of :data:`KERNEL_ROWS` plans or
        more goes through the compiled kernel (kernel.py, :func:`~.kernel.kernel_rows` per pass); a smaller
        one through numpy, in cache-sized passes (:attr:`chunk_rows`). Both give the same bits."""
        if len(X) >= KERNEL_ROWS or _kernel_loaded():
            from .kernel import kernel_rows, score_batch

            return score_batch(self, np.asarray(X), chunk or kernel_rows(self))
        chunk = chunk or self.chunk_rows
        parts = [self._evaluate(X[start:start + chunk]) for start in range(0, len(X), chunk)]
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}

    def evaluate(self, mapping) -> CostReport:
        result = self._evaluate(mapping.array[None], detail=True)
        g = self.graph
        states = result["states"][0]
        metrics = {m: float(result[m][0]) for m in self.metrics}
        incoming = np.zeros(len(g.names))
        np.add.at(incoming, g.edge_v, result["edge_time"][0])
        compute = result.get("layer_compute", np.zeros((1, len(g.names))))[0]
        names = [TYPE_NAMES, LAYOUT_NAMES]
        layers = tuple(
            LayerCost(
                name=name,
                compute=float("nan") if self.mode == "comm_only" else float(compute[i]),
                # comm_only counts elements, not seconds: no per-layer time to report (levels hold the elements)
                communication=float("nan") if self.mode == "comm_only" else float(result["node_time"][0, i] + incoming[i]),
                decisions={f"L{h}": names[g.role[i]][states[h, i]] for h in range(len(states))},
            )
            for i, name in enumerate(g.names)
        )
        plan = {
            "levels": [
                {
                    "types": {name: names[g.role[i]][states[h, i]] for i, name in enumerate(g.names)},
                    "comm_elements": float(result["per_level"]["comm_elements"][h][0]),
                    "comm_time": float(result["per_level"]["comm_time"][h][0]),
                }
                for h in range(len(states))
            ],
            "shares": {name: float(v[0, 0]) for name, v in result["shares"].items()},
        }
        feasible = bool(result.get("feasible", np.ones(1, bool))[0])
        reason = "" if feasible else f"needs {metrics['memory_bytes'] / 1e9:.3g} GB per device, more than the smallest memory"
        return CostReport(metrics=metrics, feasible=feasible, reason=reason, layers=layers, plan=plan)


def _kernel_loaded() -> bool:
    """True once this process has loaded (or compiled) the kernel."""
    kernel = sys.modules.get(f"{__package__}.kernel")
    return kernel is not None and bool(kernel.score_levels.signatures)
