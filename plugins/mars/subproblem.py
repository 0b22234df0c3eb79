"""One level-2 sub-problem: a contiguous layer set on one accelerator set with one design (Sec. V).

Its latency is a gather from the per-layer tables (note §4.3b): Σ_l node[l, s_l] plus, for every
dependency inside the set, the re-layout time (note §3.5) ``α + r · |tensor| / B`` where r is the
largest fraction of the tensor a device must receive (0 → no message). Edges into or out of the
set are the cost model's inter-set traffic and do not depend on the strategies here.
The memory rule (Sec. III, note §3.7): Σ weight boxes + max (input + output boxes) ≤ the DRAM.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import exact
from .layers import LayerGraph
from .strategies import StrategySet
from .tables import NodeTable, SetClass


@dataclass(frozen=True, eq=False)
class SubProblem:
    """Layers ``first..last`` of ``graph`` on a set of class ``cls`` with one node table."""

    graph: LayerGraph
    strategies: StrategySet
    table: NodeTable
    cls: SetClass
    first: int
    last: int
    bytes_per_element: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    @cached_property
    def node(self) -> np.ndarray:
        return self.table.node[self.first:self.last + 1]

    @cached_property
    def extents(self) -> np.ndarray:
        return self.graph.dims[self.first:self.last + 1]

    @cached_property
    def edges(self) -> list[tuple[int, int, np.ndarray, float]]:
        """(local src, local dst, re-layout fraction matrix, bytes) of the edges inside the set."""
        out = []
        for e in self.graph.edges:
            if self.first <= e.src <= self.last and self.first <= e.dst <= self.last:
                frac = self.strategies.relayout_fraction(e.kind, e.lo, e.hi)
                out.append((e.src - self.first, e.dst - self.first, frac, e.elems * self.bytes_per_element))
        return out

    @cached_property
    def _edge_groups(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Edges grouped by fraction matrix: (matrix, src (E,), dst (E,), bytes (E,)), for gathers."""
        groups: dict[int, tuple[np.ndarray, list, list, list]] = {}
        for u, v, frac, nbytes in self.edges:
            entry = groups.setdefault(id(frac), (frac, [], [], []))
            entry[1].append(u)
            entry[2].append(v)
            entry[3].append(nbytes)
        return [(frac, np.array(u), np.array(v), np.array(b, float)) for frac, u, v, b in groups.values()]

    def _relayout_time(self, frac: np.ndarray, nbytes: float) -> np.ndarray:
        return np.where(frac > 0, self.cls.latency + frac * nbytes / self.cls.bandwidth, 0.0)  # note §3.5

    # --- scoring --------------------------------------------------------------------------------
    def _relayout(self, states: np.ndarray) -> np.ndarray:
        total = np.zeros(len(states))
        for frac, u, v, nbytes in self._edge_groups:
            total = total + self._relayout_time(frac[states[:, u], states[:, v]], nbytes[None]).sum(1)
        return total

    def cost(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latency (n,) and relative memory excess (n,) (0 = valid) of strategy rows (n, size)."""
        states = np.atleast_2d(states)
        latency = np.take_along_axis(self.node, states.T, 1).sum(0) + self._relayout(states)
        return latency, self.excess(states)

    def parts(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """Latency and its parts (n,) of strategy rows (n, size): compute, collective (All-Reduce
        + SS), relayout, plus ``excess``, ``memory_bytes`` (the footprint of a device of the set) and
        ``memory_fraction`` (footprint / DRAM)."""
        states = np.atleast_2d(states)
        latency, excess = self.cost(states)
        rows = np.arange(self.size)[None, :] + self.first
        t = self.table
        footprint = t.weight_bytes[rows, states].sum(1) + t.act_bytes[rows, states].max(1)
        return {"latency": latency, "compute": t.compute[rows, states].sum(1),
                "collective": (t.allreduce[rows, states] + t.shared[rows, states] + t.halo[rows, states]).sum(1),
                "relayout": self._relayout(states), "excess": excess, "memory_bytes": footprint,
                "memory_fraction": footprint / self.cls.memory}

    def excess(self, states: np.ndarray) -> np.ndarray:
        rows = np.arange(self.size)[None, :] + self.first
        weights = self.table.weight_bytes[rows, states].sum(1)
        peak = self.table.act_bytes[rows, states].max(1)
        return np.maximum(0.0, weights + peak - self.cls.memory) / self.cls.memory  # Sec. III validity

    def breakdown(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """Per-layer seconds of one strategy row: compute, allreduce, shared (SS ring + halo), relayout
        (into the layer), and the memory boxes."""
        states = np.asarray(states, dtype=np.int64)
        rows = np.arange(self.size) + self.first
        relayout = np.zeros(self.size)
        for u, v, frac, nbytes in self.edges:
            relayout[v] += float(self._relayout_time(frac[states[u], states[v]], nbytes))
        t = self.table
        return {"compute": t.compute[rows, states], "allreduce": t.allreduce[rows, states],
                "shared": t.shared[rows, states] + t.halo[rows, states], "relayout": relayout,
                "weight_bytes": t.weight_bytes[rows, states], "act_bytes": t.act_bytes[rows, states]}

    # --- solving ----------------------------------------------------------------------------------
    def improve(self, states: np.ndarray, sweeps: int = 20) -> np.ndarray:
        """Coordinate descent on strategy rows (k, size): each layer in turn takes its best strategy
        given its neighbours' (re-layout to and from them included), until no layer changes."""
        states = np.array(np.atleast_2d(states), dtype=np.int64)
        incident: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(self.size)]
        for u, v, frac, nbytes in self.edges:
            t = self._relayout_time(frac, nbytes)  # (S_u, S_v)
            incident[u].append((v, t.T))  # rows: the other layer's state
            incident[v].append((u, t))
        rows = np.arange(len(states))
        for _ in range(sweeps):
            changed = False
            for layer in range(self.size):
                cost = self.node[layer][None, :]
                for other, t in incident[layer]:
                    cost = cost + t[states[:, other]]
                cost = np.broadcast_to(cost, (len(states), cost.shape[1]))
                best = cost.argmin(1)
                better = cost[rows, best] < cost[rows, states[:, layer]] * (1 - 1e-12)
                if better.any():
                    states[better, layer] = best[better]
                    changed = True
            if not changed:
                break
        return states

    def decode(self, keys: np.ndarray) -> np.ndarray:
        """Strategy rows (n, size) from genes (n, size, 14)."""
        return self.strategies.decode(keys, self.extents)

    @cached_property
    def greedy(self) -> np.ndarray:
        """Each layer's cheapest strategy ignoring re-layout (a level-2 seed)."""
        return self.node.argmin(1)

    def exact(self) -> tuple[float, np.ndarray, bool]:
        """Minimum latency by the exact DP, its strategies, and whether it satisfies the memory rule.

        The DP ignores the memory rule (a sum-plus-max constraint); when its optimum breaks the
        rule the optimum of the constrained problem is not known (third value False).
        """
        pairs: dict[tuple[int, int], np.ndarray] = {}
        for u, v, frac, nbytes in self.edges:
            key = (min(u, v), max(u, v))
            t = self._relayout_time(frac, nbytes)
            t = t if u < v else t.T
            pairs[key] = pairs[key] + t if key in pairs else t
        best, states = exact.solve(self.node, pairs)
        return best, states, bool(self.excess(states[None])[0] == 0)
