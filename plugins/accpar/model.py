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
of every layer's Table 6 FLOPs over its FLOP/s. Compute and communication add (Eq. 9) unless
``overlap`` is set.

``mode = "comm_only"`` reproduces the authors' reference program: no computation, equal shares,
and costs in communicated elements (metric ``comm_elements``) per level summed over levels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from optmap.cost import BATCH, CostModel, CostReport, LayerCost
from optmap.errors import OptmapError
from optmap.space import DesignSpace, categorical, integer
from optmap.system import System
from optmap.workload import Workload

from .dp import ChainDP
from .graph import block_graph
from .hierarchy import Hierarchy, Split, bisect
from .tables import (
    LAYOUT_NAMES,
    SPLITS_BATCH,
    SPLITS_IN,
    SPLITS_OUT,
    TYPE_NAMES,
    WEIGHTED,
    inter_fraction_of,
    intra_from,
    intra_operands,
    table6_flops,
    transition_code,
)


@dataclass
class _Class:
    """Tensor dimensions of every node as one sub-array class sees them (leading axes broadcast)."""

    batch: np.ndarray
    d_in: np.ndarray
    d_out: np.ndarray
    share: np.ndarray  # this sub-array's share of the whole work
    scale: np.ndarray | float = 1.0  # cost multiplier of this sub-array ("linear" share scaling)


@dataclass(frozen=True)
class _Decisions:
    """A level's states and what follows from them, computed once for every split of the level."""

    state: np.ndarray  # (rows, nodes), or all three states on a leading axis
    code: np.ndarray | None  # transition code of every edge (tables.transition_code)
    masks: tuple[np.ndarray, np.ndarray, np.ndarray]  # node splits batch, in-channels, out-channels
    operands: tuple  # Table 4's factors per node (tables.intra_operands)
    factors: dict = field(default_factory=dict)  # shrink factors per fixed share (filled on use)


# Elements of one (rows, nodes + edges) array in a scoring pass; sets the rows per pass.
CHUNK_ELEMENTS = 1 << 15

# Capability of this cost model that the layer-wise DP engines need: per-level node and
# transition cost tables (``chain_tables``) over the block view.
LAYER_CHAIN_TABLES = "layer_chain_tables"


class AccParCostModel(CostModel):
    """AccPar (HPCA 2020): heterogeneous tensor partitioning, Type-I/II/III per level and layer."""

    formulation = "AccPar's formulation ([cost] model = \"accpar\")"
    capabilities = frozenset({BATCH, LAYER_CHAIN_TABLES})

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
        ratio_steps: int = 60,
        check_memory: bool = True,
        weight_copies: int = 3,
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
        plus stored activations exceed its memory (the paper does not check capacity, §6.8)."""
        if workload.phase != "training":
            raise OptmapError("accpar models training (forward, backward, gradient); set [workload] phase = \"training\"")
        if ratio_steps < 2:
            raise OptmapError(f"ratio_steps must be >= 2, got {ratio_steps}")
        self.workload, self.system = workload, system
        self.mode, self.bandwidth, self.combine = mode, bandwidth, combine
        self.overlap, self.ratio_steps, self.share_scaling = overlap, ratio_steps, share_scaling
        self.check_memory, self.weight_copies = check_memory, weight_copies
        self.graph = block_graph(workload)
        self._chain_dp: ChainDP | None = None
        self._every_state: _Decisions | None = None
        self.hierarchy: Hierarchy = bisect(system)
        if mode == "comm_only" and self.hierarchy.ratios:
            raise OptmapError("accpar mode = \"comm_only\" follows the reference program, which assumes one accelerator kind")
        self.bytes = workload.bytes_per_element
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
        variables += [integer(s.ratio, 1, self.ratio_steps - 1, level=s.level) for s in self.hierarchy.ratios]
        return DesignSpace(tuple(variables))

    def plan_vector(self, states: np.ndarray, shares: dict[str, float] | None = None) -> np.ndarray:
        """A space vector from (levels, nodes) states and shares (default: equal split)."""
        x = np.zeros(self.space.width)
        x[self._state_columns.ravel()] = np.asarray(states).ravel()
        for name, column in self._ratio_columns.items():
            share = (shares or {}).get(name, 0.5)
            x[column] = min(self.ratio_steps - 1, max(1, round(share * self.ratio_steps)))
        return x

    # --- one level ----------------------------------------------------------------------------
    def _side_bandwidth(self, split: Split, side: int) -> float:
        own, other = (s.network_bandwidth for s in (split.sides[side], split.sides[1 - side]))
        return {"accessor": own, "remote": other, "min": min(own, other)}[self.bandwidth]

    def _decisions(self, state, state_u=None, state_v=None) -> _Decisions:
        """What a level's states decide, once for all its splits: the nodes' states, the edges'
        transitions (when ``state_u``/``state_v`` are given) and which dimension each node splits."""
        g = self.graph
        node_code = g.role * 3 + state
        code = None if state_u is None else np.ascontiguousarray(  # C order: edge sums add up as before
            transition_code(g.edge_role_u, state_u, g.edge_role_v, state_v))
        masks = tuple(mask.ravel().take(node_code) for mask in (SPLITS_BATCH, SPLITS_IN, SPLITS_OUT))
        return _Decisions(state, code, masks, intra_operands(g.role, state, g.kernel, g.s_in, g.s_out))

    def _sides(self, split: Split, dims: _Class, share0):
        """Per side of ``split``: (side, share, share its tensor shapes see, cost weight)."""
        linear = self.share_scaling == "linear" and split.ratio is not None
        for side in range(1 if split.symmetric else 2):
            share = share0 if side == 0 else 1.0 - share0
            shape_share = 0.5 if linear else share  # "linear": amounts of the equal split...
            weight = dims.scale * (2.0 * share if linear else 1.0)  # ...scaled by share / (1/2)
            yield side, share, shape_share, weight, linear

    def _level(self, split: Split, dims: _Class, share0, decided: _Decisions):
        """Per-node and per-edge cost of one split, the slowest side's (or both sides' sum):
        (node elements, edge elements, node seconds, edge seconds)."""
        g = self.graph
        intra = intra_from(decided.operands, dims.batch, dims.d_in, dims.d_out)
        received = (dims.batch * dims.d_in * g.s_in).take(g.edge_v, axis=-1)  # A(F_l) of the consumer (ref. program)
        pick = np.maximum if self.combine == "max" else np.add
        nodes, edges, same = [], [], True
        for side, share, shape_share, weight, linear in self._sides(split, dims, share0):
            seconds = 1.0 if self.mode == "comm_only" else self.bytes / self._side_bandwidth(split, side)
            inter = received * inter_fraction_of(decided.code, shape_share)
            if linear or np.ndim(weight):
                nodes.append((intra * weight, seconds))
                inter = inter * weight  # B rows of weights may widen it
                same = False
            else:
                nodes.append((intra, seconds))
            edges.append((inter, inter * seconds))
        if same and (len(nodes) == 1 or self.combine == "max"):
            # both sides fetch the same Table 4 amounts: max(a·s0, a·s1) = a·max(s0, s1) exactly
            node = (intra, intra * max(seconds for _, seconds in nodes))
        else:
            node = (nodes[0][0], nodes[0][0] * nodes[0][1])
            for amount, seconds in nodes[1:]:
                node = (pick(node[0], amount), pick(node[1], amount * seconds))
        edge = edges[0]
        for other in edges[1:]:
            edge = (pick(edge[0], other[0]), pick(edge[1], other[1]))
        return node[0], edge[0], node[1], edge[1]

    def _shrink(self, split: Split, dims: _Class, share0, decided: _Decisions) -> list[_Class]:
        """Each side's tensor dimensions after ``split``: shrunk by its share along the dimension
        its state splits (§3.2 SHRINK)."""
        children = []
        for _, share, shape_share, weight, _ in self._sides(split, dims, share0):
            factors = decided.factors.get(shape_share) if np.ndim(shape_share) == 0 else None
            if factors is None:
                factors = tuple(np.where(mask, shape_share, 1.0) for mask in decided.masks)
                if np.ndim(shape_share) == 0:
                    decided.factors[shape_share] = factors  # the same for every split of the level
            batch, d_in, d_out = factors
            children.append(_Class(dims.batch * batch, dims.d_in * d_in, dims.d_out * d_out, dims.share * share, weight))
        return children

    def _shares(self, split: Split, shares: dict[str, np.ndarray]):
        return split.share if split.ratio is None else shares[split.ratio]

    def _root(self) -> _Class:
        g = self.graph
        return _Class(np.full_like(g.d_in, float(self.workload.batch)), g.d_in, g.d_out, np.ones(1))

    # --- layer-chain tables (for the DP engines) ----------------------------------------------
    def chain_tables(self, level: int, previous: np.ndarray, shares: dict[str, float], metric: str | None = None):
        """Node costs (nodes, 3) and edge costs (edges, 3, 3) of ``level`` in ``metric``.

        ``previous`` holds the states chosen at the levels above (level, nodes), which fix the
        tensor shapes this level sees. ``metric`` is "time" (seconds) or "comm_elements".
        """
        columns = {k: np.array([[v]]) for k, v in shares.items()}
        node, edge = self.level_tables(level, self._class_dims(np.asarray(previous, int)[None], columns, level),
                                       columns, metric or self.dp_metric)
        return node[0], edge[0]

    def chain_dp(self) -> ChainDP:
        """The batched layer DP over this model's block graph (built once)."""
        if self._chain_dp is None:
            self._chain_dp = ChainDP(self.graph)
        return self._chain_dp

    def root_classes(self) -> list[_Class]:
        """The sub-array classes at level 0 (the whole array), for :meth:`level_tables`."""
        return [self._root()]

    def level_tables(self, level: int, classes: list[_Class], shares: dict[str, np.ndarray], metric: str):
        """Node costs (B, nodes, 3) and edge costs (B, edges, 3, 3) of ``level`` for B rows whose
        levels above left the sub-array ``classes`` (:meth:`descend`); ``shares`` are (B, 1)
        columns, one per heterogeneous split (B = 1 broadcasts)."""
        n_nodes, n_edges = len(self.graph.names), len(self.graph.edge_u)
        every = self._every_state
        if every is None:  # all states at once: node states on a leading axis, edge transitions on two
            every = self._every_state = self._decisions(
                np.arange(3)[:, None, None], np.arange(3)[:, None, None, None], np.arange(3)[None, :, None, None])
        node, edge = np.zeros((3, 1, n_nodes)), np.zeros((3, 3, 1, n_edges))
        offset = 0 if metric == "comm_elements" else 2
        for split in self.hierarchy.splits[level]:
            combined = self._level(split, classes[split.parent], self._shares(split, shares), every)
            node = np.maximum(node, combined[offset])  # sub-arrays of a level run in parallel
            edge = np.maximum(edge, combined[offset + 1])
        return np.moveaxis(node, 0, -1), np.moveaxis(edge, (0, 1), (-2, -1))

    def descend(self, level: int, classes: list[_Class], states: np.ndarray, shares: dict[str, np.ndarray]):
        """The classes of level ``level + 1`` after rows with ``states`` (B, nodes) at ``level``."""
        decided = self._decisions(states)
        next_classes: list[_Class | None] = [None] * len(self.hierarchy.classes[level + 1])
        for split in self.hierarchy.splits[level]:
            for child, dims in zip(split.children, self._shrink(split, classes[split.parent],
                                                               self._shares(split, shares), decided)):
                next_classes[child] = dims
        return next_classes

    def _class_dims(self, states: np.ndarray, shares: dict[str, np.ndarray], upto: int) -> list[_Class]:
        """Class dimensions at level ``upto`` for plans ``states`` (N, levels, nodes)."""
        classes = self.root_classes()
        for h in range(upto):
            classes = self.descend(h, classes, states[:, h, :], shares)
        return classes

    # --- whole-plan evaluation ----------------------------------------------------------------
    def _decode(self, X: np.ndarray):
        states = X.take(self._state_columns, axis=1).astype(int)  # C order: row sums add up as before
        shares = {name: X[:, [col]] / self.ratio_steps for name, col in self._ratio_columns.items()}
        return states, shares

    def _evaluate(self, X: np.ndarray, detail: bool = False) -> dict:
        g = self.graph
        states, shares = self._decode(np.atleast_2d(X))
        n = len(states)
        per_level = {"comm_elements": [], "comm_time": []}
        node_time = np.zeros((n, len(g.names)))
        edge_time = np.zeros((n, len(g.edge_u)))
        classes = [self._root()]
        leaves: list[tuple[_Class, object]] = []
        for h, level_splits in enumerate(self.hierarchy.splits):
            state = states[:, h, :]
            decided = self._decisions(state, state.take(g.edge_u, axis=1), state.take(g.edge_v, axis=1))
            level = None  # node elements, edge elements, node seconds, edge seconds
            next_classes: list = [None] * len(self.hierarchy.classes[h + 1])
            for split in level_splits:
                dims, share = classes[split.parent], self._shares(split, shares)
                combined = self._level(split, dims, share, decided)
                # sub-arrays of a level run in parallel: the slowest sets each node's and edge's pace
                level = combined if level is None else tuple(np.maximum(a, b) for a, b in zip(level, combined))
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
        comm_elements = np.sum(per_level["comm_elements"], axis=0) if per_level["comm_elements"] else np.zeros(n)
        out = {"comm_elements": comm_elements, "comm_bytes": comm_elements * self.bytes}
        if detail:
            out.update(per_level=per_level, node_time=node_time, edge_time=edge_time, states=states, shares=shares)
        if self.mode == "comm_only":
            return out
        compute, memory, fits = self._leaf_costs(leaves, n)
        comm_time = np.sum(per_level["comm_time"], axis=0) if per_level["comm_time"] else np.zeros(n)
        out.update(
            time=np.maximum(compute.sum(1), comm_time) if self.overlap else compute.sum(1) + comm_time,
            compute_time=compute.sum(1),
            comm_time=comm_time,
            memory_bytes=memory,
            feasible=fits,
        )
        if detail:
            out["layer_compute"] = compute
        return out

    def _leaf_costs(self, leaves, n: int):
        """Per-layer compute time (slowest leaf), peak memory per device, and whether it fits."""
        g, dtype = self.graph, self.workload.dtype
        compute = np.zeros((n, len(g.names)))
        memory = np.zeros(n)
        fits = np.ones(n, bool)
        for dims, sub in leaves:
            (kind, _), = sub.members
            share = np.broadcast_to(dims.share, (n, 1)) if np.ndim(dims.share) else np.full((n, 1), dims.share)
            compute = np.maximum(compute, share * self.layer_flops / kind.flops_per_s(dtype))  # Eq. 8 at the leaf
            weights = np.broadcast_to(dims.d_in * dims.d_out * g.kernel, (n, len(g.names))).sum(1)
            stored = np.broadcast_to(dims.batch * dims.d_in * g.s_in, (n, len(g.names))).sum(1)
            need = self.bytes * (self.weight_copies * weights + stored)
            memory = np.maximum(memory, need)
            if self.check_memory:
                fits &= need <= kind.memory_bytes
        return compute, memory, fits

    def level_costs(self, X: np.ndarray, metric: str = "comm_time") -> np.ndarray:
        """Each level's own cost (``comm_time`` or ``comm_elements``) for every row: (N, levels)."""
        return np.column_stack(self._evaluate(X, detail=True)["per_level"][metric])

    @property
    def chunk_rows(self) -> int:
        """Rows scored per pass: enough that one (rows, nodes + edges) array of float64 fills
        about :data:`CHUNK_ELEMENTS` (256 KB, half a core's L2 cache here), so the twenty-odd
        arrays a level makes stay in cache; more rows only add memory traffic."""
        per_row = len(self.graph.names) + len(self.graph.edge_u)
        return int(min(4096, max(64, CHUNK_ELEMENTS // max(1, per_row))))

    def evaluate_batch(self, X: np.ndarray, chunk: int | None = None) -> dict[str, np.ndarray]:
        """Score every row of X, vectorised over cache-sized chunks of rows (:attr:`chunk_rows`)."""
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
                compute=float(compute[i]),
                communication=float(result["node_time"][0, i] + incoming[i]),
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
