"""AccPar's layer-wise DP (Eq. 9, multi-path blocks §5.2) for a batch of cost tables at once.

The same min-plus recursion as :func:`optmap.chain_dp.solve`, step for step and with the same
ties (lowest state index), so plans and costs are identical bit for bit; only the bookkeeping
differs:

- every path of every block is padded in front to the longest path with zero-cost dummy nodes
  joined by identity hops (0 on the diagonal, ``inf`` off it), and every segment to the most
  paths with all-zero paths; ``0 + x == x`` and ``inf + x == inf`` exactly, so the real nodes'
  steps see the matrices they would see unpadded (same costs, same pointers) and the dummies'
  states are dropped. What is left is one group of equally long paths: their DP is a few numpy
  steps over all paths and rows, numpy's per-call cost (not the array sizes) setting the time
  for a single row;
- a min-plus step takes its three candidates (one per state of the node it leaves) as separate
  arrays, so the minimum and the first index reaching it are element-wise operations, far
  cheaper than numpy's ``min``/``argmin`` over a short axis;
- the chain is a sequence of 3×3 min-plus steps: over plain Python floats row by row for fewer
  than ``NUMPY_CHAIN_ROWS`` rows (about half a microsecond per step), over all rows at once in
  numpy for more, with the same additions and ties;
- the paths' inner states are then read back for all rows and paths at once.

A batch row is one set of cost tables: one share of a heterogeneous split in AccPar's share
search (the 59 grid points of ``ratio_steps = 60`` are one batch), or a single plan.
"""

from __future__ import annotations

import numpy as np

from .graph import Graph

STATES = 3
IDENTITY = np.where(np.eye(STATES, dtype=bool), 0.0, np.inf)  # a hop that keeps the state, for free
PADDING_HOPS = np.stack([IDENTITY, np.zeros((STATES, STATES))], -1)[..., None]  # (3, 3, 2 hops, 1 row)
NUMPY_CHAIN_ROWS = 16  # from this many rows the chain runs over all rows in numpy (measured break-even)


class ChainDP:
    """The DP of one block graph, solved for a batch of node and edge cost tables.

    Path ``k * width + q`` is the q-th path of segment k (chain node k to chain node k + 1);
    ``inner[j]`` and ``hops[j]`` hold, for every path, its j-th inner node and the edge into it
    (``hops[-1]``: the edge into the tail), padded in front as the module docstring says. The
    padding entries follow the real ones: node ``nodes`` costs 0, edge ``edges`` is the
    identity hop, edge ``edges + 1`` costs 0.
    """

    def __init__(self, graph: Graph) -> None:
        edge_of = {}
        for e, (u, v) in enumerate(zip(graph.edge_u.tolist(), graph.edge_v.tolist())):
            edge_of[(u, v)] = e  # the last edge of a pair wins, as in a dict of edge costs
        self.nodes, self.edges = len(graph.names), len(graph.edge_u)
        self.chain = np.array(graph.chain, int)
        self.segments = len(graph.segments)
        self.length = max((len(path) for segment in graph.segments for path in segment), default=0)
        self.width = max((len(segment) for segment in graph.segments), default=1)
        inner, hops = [], []
        for k, segment in enumerate(graph.segments):
            for q in range(self.width):
                path = segment[q] if q < len(segment) else None
                nodes, edges = self._padded_path(graph.chain[k], path, graph.chain[k + 1], edge_of)
                inner.append(nodes)
                hops.append(edges)
        self.paths = len(inner)
        self.inner = np.array(inner, int).reshape(self.paths, self.length).T.copy()  # (L, paths)
        self.hops = np.array(hops, int).reshape(self.paths, self.length + 1).T.copy()  # (L + 1, paths)
        self.head = np.repeat(np.arange(self.segments), self.width)  # each path's ends, as chain indices
        self.tail = self.head + 1
        self.across = np.arange(self.paths)[:, None]  # path indices as a column, for _unwind
        # each node's row in the chain's states stacked on the inner nodes' (L × paths), in _unwind
        rows = len(self.chain) + np.arange(self.length * self.paths).reshape(self.length, self.paths)
        real = self.inner < self.nodes
        self.row = np.zeros(self.nodes, int)
        self.row[self.chain], self.row[self.inner[real]] = np.arange(len(self.chain)), rows[real]

    def _padded_path(self, head: int, path: tuple[int, ...] | None, tail: int, edge_of: dict):
        """Inner nodes and the edges into them and into the tail, padded in front to the longest
        path; ``path=None`` is an all-zero path (a segment with fewer paths than the widest)."""
        blank, identity, zero = self.nodes, self.edges, self.edges + 1
        if path is None:
            return [blank] * self.length, [identity] * self.length + [zero]
        ends = (head, *path, tail)
        edges = [edge_of[(a, b)] for a, b in zip(ends[:-1], ends[1:])]
        pad = self.length - len(path)
        return [blank] * pad + list(path), [identity] * pad + edges

    def solve(self, node: np.ndarray, edge: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Minimum cost (B,) and optimal states (B, nodes) for node costs (B, nodes, 3) (``inf``
        forbids a state) and edge costs (B, edges, 3, 3) indexed by (state of tail, state of head);
        either table may have one row for all B."""
        nodes, edges = self._padded_tables(node, edge)
        matrices, pointers = self._paths(nodes, edges)
        blocks = matrices[:, :, :, 0]
        for q in range(1, self.width):  # the paths of a block add up in order (§5.2)
            blocks = blocks + matrices[:, :, :, q]
        cost, chain_states = self._chain(nodes[:, self.chain], blocks)
        return cost, self._unwind(chain_states, pointers).T

    def _padded_tables(self, node: np.ndarray, edge: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Node costs (3, nodes + 1, B) and edge costs (3, 3, edges + 2, B), the padding entries
        appended: a zero-cost node, the identity hop and a zero hop."""
        batch = max(len(node), len(edge))
        nodes = np.zeros((STATES, self.nodes + 1, batch))
        nodes[:, :-1] = node.transpose(2, 1, 0)
        edges = np.empty((STATES, STATES, self.edges + 2, batch))
        edges[:, :, :-2] = edge.transpose(2, 3, 1, 0)
        edges[:, :, -2:] = PADDING_HOPS
        return nodes, edges

    def _paths(self, nodes: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Every path's cost (t, p, segments, width, B) from head state p to tail state t, and per
        inner node its best state (t, p, paths, B) given the next node's state t: the steps of
        ``chain_dp._path_matrix`` for all paths and rows at once."""
        inner = np.take(nodes, self.inner, 1)  # (s, L, paths, B)
        hops = np.take(edges, self.hops[1:], 2)  # (s, t, L, paths, B)
        matrix = np.take(edges.swapaxes(0, 1), self.hops[0], 2)  # (t, p, paths, B)
        pointers = []
        for j in range(self.length):
            matrix, arg = _minplus((matrix + inner[:, j, None])[:, None] + hops[:, :, j, None])
            pointers.append(arg)
        return matrix.reshape(STATES, STATES, self.segments, self.width, nodes.shape[-1]), pointers

    def _chain(self, nodes: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chain's recursion: minimum cost (B,) and states (chain nodes, B) for chain node
        costs (3, chain nodes, B) and block costs (t, p, segments, B), row by row over Python
        floats for few rows (:func:`_chain_floats`), over all rows at once in numpy for many
        (:func:`_chain_arrays`)."""
        batch = nodes.shape[-1]
        if batch >= NUMPY_CHAIN_ROWS:
            return _chain_arrays(nodes, np.ascontiguousarray(blocks.transpose(2, 1, 0, 3)))
        blocks = blocks.reshape(STATES * STATES, self.segments, batch)
        rows = [_chain_floats(nodes[..., b].tolist(), blocks[..., b].tolist()) for b in range(batch)]
        return np.array([cost for cost, _ in rows], float), np.array([states for _, states in rows], int).T

    def _unwind(self, chain_states: np.ndarray, pointers: list[np.ndarray]) -> np.ndarray:
        """The states of all nodes (nodes, B) given the chain's (chain nodes, B): the inner nodes'
        read back as ``chain_dp._unwind`` does, for every row and path at once, then every node's
        picked from the chain's and the inner nodes' stacked."""
        start, state, rows = chain_states[self.head], chain_states[self.tail], np.arange(chain_states.shape[1])
        inner = []
        for arg in reversed(pointers):
            state = arg[state, start, self.across, rows]
            inner.append(state)
        return np.concatenate([chain_states, *reversed(inner)])[self.row]


def _minplus(total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum over the first axis of ``total`` (3, ...) and the first index reaching it (int8),
    as ``min(0)``/``argmin(0)`` would give them: the middle state of a min-plus step (Eq. 9)."""
    v0, v1, v2 = total[0], total[1], total[2]
    low = np.minimum(v0, v1)
    first, last = (v1 < v0).view(np.int8), (v2 < low).view(np.int8)
    return np.minimum(low, v2), np.maximum(first, last + last)


def _chain_arrays(nodes: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chain's recursion (Eq. 9) over all rows at once: minimum cost (B,) and states
    (chain nodes, B) for chain node costs (3, chain nodes, B) and block costs (segments, 3, 3, B)
    indexed by (state of head, state of tail). The same additions and ties as :func:`_chain_floats`."""
    cost = nodes[:, 0]
    history = []
    for k in range(len(blocks)):
        cost, arg = _minplus(cost[:, None] + blocks[k])
        cost = cost + nodes[:, k + 1]
        history.append(arg)
    best, state = _minplus(cost)
    every = np.arange(nodes.shape[-1])
    states = [state]
    for arg in reversed(history):
        state = arg[state, every]
        states.append(state)
    return best, np.array(states[::-1], int)


def _chain_floats(nodes: list[list[float]], blocks: list[list[float]]) -> tuple[float, list[int]]:
    """The chain's recursion (Eq. 9) for one row over Python floats (chain_dp.solve's loop).

    ``nodes[s][k]``: cost of state s of the k-th chain node; ``blocks[3t + p][k]``: cost of the
    k-th block from state p to state t. Ties go to the lowest state, as numpy's argmin.
    """
    c0, c1, c2 = nodes[0][0], nodes[1][0], nodes[2][0]
    following = zip(nodes[0][1:], nodes[1][1:], nodes[2][1:])
    history = []
    for (a0, b0, d0, a1, b1, d1, a2, b2, d2), (n0, n1, n2) in zip(zip(*blocks), following):
        # for each state s of the next node: the best state of this one, the first of equal minima;
        # written out three times, as statements: a helper call or a tuple-building conditional
        # expression costs a third more per step on this, the DP's hottest loop (measured)
        v0, v1, v2 = c0 + a0, c1 + b0, c2 + d0
        if v0 <= v1 and v0 <= v2:
            s0, m0 = 0, v0
        elif v1 <= v2:
            s0, m0 = 1, v1
        else:
            s0, m0 = 2, v2
        v0, v1, v2 = c0 + a1, c1 + b1, c2 + d1
        if v0 <= v1 and v0 <= v2:
            s1, m1 = 0, v0
        elif v1 <= v2:
            s1, m1 = 1, v1
        else:
            s1, m1 = 2, v2
        v0, v1, v2 = c0 + a2, c1 + b2, c2 + d2
        if v0 <= v1 and v0 <= v2:
            s2, m2 = 0, v0
        elif v1 <= v2:
            s2, m2 = 1, v1
        else:
            s2, m2 = 2, v2
        c0, c1, c2 = m0 + n0, m1 + n1, m2 + n2
        history.append((s0, s1, s2))
    cost = (c0, c1, c2)
    state = min(range(STATES), key=cost.__getitem__)
    states = [state]
    for arg in reversed(history):
        state = arg[state]
        states.append(state)
    return cost[states[0]], states[::-1]
