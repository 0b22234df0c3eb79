"""One bisection level of AccPar's cost, for many plans at once (the cost model's arithmetic).

Every sub-array class of a level is cut in two; each side fetches its intra-layer partial sums
(Table 4) and inter-layer conversions (Table 5), divided by a bandwidth; per node and edge the
slowest side sets the pace; each side's tensors then shrink by its share along the dimension its
type splits (§3.2 SHRINK). :class:`LevelCosts` is the half of
:class:`~optmap.plugins.accpar.model.AccParCostModel` that does this, for whole-plan scoring
and for the per-level tables of the layer DP.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .dp import ChainDP
from .hierarchy import Split
from .tables import TYPE_III, inter_fraction_of, intra_products, transition_code


@dataclass
class Dims:
    """Tensor dimensions of every node as one sub-array class sees them (leading axes broadcast)."""

    sizes: np.ndarray  # (3, rows or 1, nodes): batch, in-channels, out-channels of every node
    share: np.ndarray  # this sub-array's share of the whole work
    scale: np.ndarray | float = 1.0  # cost multiplier of this sub-array ("linear" share scaling)

    batch = property(lambda self: self.sizes[0])
    d_in = property(lambda self: self.sizes[1])
    d_out = property(lambda self: self.sizes[2])


class Decisions:
    """A level's states and what follows from them, shared by every split of the level; each part
    is computed when a split first needs it.

    ``tables`` are the model's per-state tables (:func:`~.tables.state_tables`), (3, nodes) rows
    gathered at ``index`` = state·nodes + node. ``every`` marks all three states on a leading axis
    (``state`` = 0, 1, 2 there), which the DP's tables take.
    """

    def __init__(self, tables, state, code=None, every: bool = False) -> None:
        self.tables, self.state, self.code, self.every = tables, state, code, every
        nodes = tables[0].shape[-1]
        self.index = state * nodes + np.arange(nodes, dtype=np.int32)
        self._picks = {nodes: self.index}  # pick()'s gather indices, by the size of one stacked plane
        self._fractions: dict[float, np.ndarray] = {}
        self._factors: dict[float, np.ndarray] = {}

    @cached_property
    def constant(self) -> np.ndarray:
        """Table 4's constant factor of every node's state: k, HoWo or HiWi (0 for merge nodes)."""
        return self.tables[0].take(self.index)

    @cached_property
    def masks(self) -> np.ndarray:
        """(3, ...): whether every node's state splits its batch, in- and out-channels (§3.2)."""
        return self.tables[1].reshape(3, -1).take(self.index, axis=1)

    def pick(self, stacked: np.ndarray) -> np.ndarray:
        """Every node's entry of ``stacked`` (3, ..., nodes), the one of its state: one gather at
        state·size + position (the level's ``index`` for a stack of one row)."""
        if self.every:
            return stacked
        size = stacked[0].size
        if size not in self._picks:
            self._picks[size] = self.state * size + np.arange(size, dtype=np.int32).reshape(stacked.shape[1:])
        return stacked.take(self._picks[size])

    def fraction(self, share) -> np.ndarray:
        """Table 5 for every edge's transition, for the side with ``share``."""
        if np.ndim(share):
            return inter_fraction_of(self.code, share)
        if share not in self._fractions:
            self._fractions[share] = inter_fraction_of(self.code, share)
        return self._fractions[share]

    def factors(self, share) -> np.ndarray:
        """(3, ...) factors of batch, D_i, D_o for the side with ``share``: the share along the
        dimensions every node's state splits, else 1 (§3.2 SHRINK). A share per plan (B, 1) is
        gathered from per-plan pairs (1, share) at 2·b + mask."""
        if np.ndim(share):
            pairs = np.concatenate([np.ones_like(share), share], axis=-1)
            return pairs.take(self.masks + np.arange(0, pairs.size, 2, dtype=np.int32).reshape(-1, 1))
        if share not in self._factors:
            self._factors[share] = np.where(self.tables[1], share, 1.0).reshape(3, -1).take(self.index, axis=1)
        return self._factors[share]


class LevelCosts:
    """Per-level arithmetic of the AccPar cost model (options and graph come from the model)."""

    # --- one level ----------------------------------------------------------------------------
    def _side_bandwidth(self, split: Split, side: int) -> float:
        own, other = (s.network_bandwidth for s in (split.sides[side], split.sides[1 - side]))
        paper = {"accessor": own, "remote": other, "min": min(own, other)}[self.bandwidth]
        return min(paper, self.networks[(split.level, split.parent)].bandwidth)  # and a link the file set

    def _split_seconds(self, split: Split) -> tuple[float, float]:
        """Seconds per element each side of ``split`` fetches (Eq. 7: bytes over bandwidth); 1 in
        "comm_only" mode, which counts elements."""
        if self.mode == "comm_only":
            return 1.0, 1.0
        return tuple(self.bytes / self._side_bandwidth(split, side) for side in (0, 1))

    def _decisions(self, state, state_u=None, state_v=None, every: bool = False) -> Decisions:
        """What a level's states decide, once for all its splits: the nodes' states and the edges'
        transitions (when ``state_u``/``state_v`` are given)."""
        g = self.graph
        code = None if state_u is None else np.ascontiguousarray(  # C order: edge sums add up as before
            transition_code(g.edge_role_u, state_u, g.edge_role_v, state_v))
        return Decisions(self.state_tables, state, code, every)

    def _sides(self, split: Split, dims: Dims, share0):
        """Per side of ``split``: (side, share, share its tensor shapes see, cost weight)."""
        linear = self.share_scaling == "linear" and split.ratio is not None
        for side in range(1 if split.symmetric else 2):
            share = share0 if side == 0 else 1.0 - share0
            shape_share = 0.5 if linear else share  # "linear": amounts of the equal split...
            weight = dims.scale * (2.0 * share if linear else 1.0)  # ...scaled by share / (1/2)
            yield side, share, shape_share, weight, linear

    def _level(self, split: Split, dims: Dims, share0, decided: Decisions):
        """Per-node and per-edge cost of one split, the slowest side's (or both sides' sum):
        (node elements, edge elements, node seconds, edge seconds)."""
        g = self.graph
        products = intra_products(dims.sizes)
        intra = decided.pick(products) * decided.constant  # Table 4: (first·second)·constant
        received = (products[TYPE_III] * g.s_in)[..., g.edge_v]  # A(F_l) = B·D_i·HiWi of the consumer (ref. program)
        pick = np.maximum if self.combine == "max" else np.add
        nodes, edges, same = [], [], True
        for side, share, shape_share, weight, linear in self._sides(split, dims, share0):
            seconds = self.seconds[(split.level, split.parent)][side]
            inter = received * decided.fraction(shape_share)  # Table 5: a fraction of A(F_{l+1})
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
        latency = 0.0 if self.mode == "comm_only" else self.networks[(split.level, split.parent)].latency
        if latency:  # one latency per transfer that moves data, when the file sets one (network.py)
            return node[0], edge[0], node[1] + latency * (node[0] > 0), edge[1] + latency * (edge[0] > 0)
        return node[0], edge[0], node[1], edge[1]

    def _shrink(self, split: Split, dims: Dims, share0, decided: Decisions) -> list[Dims]:
        """Each side's tensor dimensions after ``split``: shrunk by its share along the dimension
        its state splits (§3.2 SHRINK)."""
        return [Dims(dims.sizes * decided.factors(shape_share), dims.share * share, weight)
                for _, share, shape_share, weight, _ in self._sides(split, dims, share0)]

    def _shares(self, split: Split, shares: dict[str, np.ndarray]):
        return split.share if split.ratio is None else shares[split.ratio]

    @cached_property
    def root(self) -> Dims:
        """The whole array, the one class of level 0: every node's full tensors, as one row."""
        g = self.graph
        return Dims(np.stack([np.full_like(g.d_in, float(self.workload.batch)), g.d_in, g.d_out])[:, None], np.ones(1))

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

    def root_classes(self) -> list[Dims]:
        """The sub-array classes at level 0 (the whole array), for :meth:`level_tables`."""
        return [self.root]

    def level_tables(self, level: int, classes: list[Dims], shares: dict[str, np.ndarray], metric: str):
        """Node costs (B, nodes, 3) and edge costs (B, edges, 3, 3) of ``level`` for B rows whose
        levels above left the sub-array ``classes`` (:meth:`descend`); ``shares`` are (B, 1)
        columns, one per heterogeneous split (B = 1 broadcasts)."""
        n_nodes, n_edges = len(self.graph.names), len(self.graph.edge_u)
        every = self._every_state
        if every is None:  # all states at once: node states on a leading axis, edge transitions on two
            every = self._every_state = self._decisions(
                np.arange(3)[:, None, None], np.arange(3)[:, None, None, None], np.arange(3)[None, :, None, None], True)
        node, edge = np.zeros((3, 1, n_nodes)), np.zeros((3, 3, 1, n_edges))
        offset = 0 if metric == "comm_elements" else 2
        for split in self.hierarchy.splits[level]:
            combined = self._level(split, classes[split.parent], self._shares(split, shares), every)
            node = np.maximum(node, combined[offset])  # sub-arrays of a level run in parallel
            edge = np.maximum(edge, combined[offset + 1])
        return np.moveaxis(node, 0, -1), np.moveaxis(edge, (0, 1), (-2, -1))

    def descend(self, level: int, classes: list[Dims], states: np.ndarray, shares: dict[str, np.ndarray]):
        """The classes of level ``level + 1`` after rows with ``states`` (B, nodes) at ``level``."""
        decided = self._decisions(states)
        next_classes: list[Dims | None] = [None] * len(self.hierarchy.classes[level + 1])
        for split in self.hierarchy.splits[level]:
            for child, dims in zip(split.children, self._shrink(split, classes[split.parent],
                                                               self._shares(split, shares), decided)):
                next_classes[child] = dims
        return next_classes

    def _class_dims(self, states: np.ndarray, shares: dict[str, np.ndarray], upto: int) -> list[Dims]:
        """Class dimensions at level ``upto`` for plans ``states`` (N, levels, nodes)."""
        classes = self.root_classes()
        for h in range(upto):
            classes = self.descend(h, classes, states[:, h, :], shares)
        return classes
