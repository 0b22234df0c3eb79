"""AccPar's layer-wise DP (Eq. 9, multi-path blocks §5.2) for a batch of cost tables at once.

The same min-plus recursion as :func:`optmap.chain_dp.solve`, step for step and with the same
ties (lowest state index), so plans and costs are identical; only the bookkeeping differs:

- every path of every block is padded in front to the longest path with zero-cost dummy nodes
  joined by identity hops (0 on the diagonal, ``inf`` off it), and every segment to the most paths
  with all-zero paths; ``0 + x == x`` and ``inf + x == inf`` exactly, so the padding changes no
  cost, and it leaves one path group: the paths' DP is a few numpy steps over all paths and rows;
- the chain is a sequence of 3×3 min-plus steps: over plain Python floats row by row for a few
  rows (about a microsecond per step), over all rows at once in numpy for many;
- the paths' inner states are then read back for all rows and paths at once.

A min-plus step takes the three candidates (one per state of the node it leaves) as separate
arrays: the minimum and the first index reaching it are then element-wise operations, far
cheaper than numpy's ``min``/``argmin`` over a short axis.

A batch row is one set of cost tables: one share of a heterogeneous split in AccPar's share
search (the 59 grid points of ``ratio_steps = 60`` are one batch), or a single plan.
"""

from __future__ import annotations

import numpy as np

from .graph import Graph

STATES = 3
IDENTITY = np.where(np.eye(STATES, dtype=bool), 0.0, np.inf)  # a hop that keeps the state, for free
NUMPY_CHAIN_ROWS = 8  # from this many rows the chain runs over all rows in numpy


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
        segment = np.repeat(np.arange(self.segments), self.width)
        self.head, self.tail = self.chain[segment], self.chain[segment + 1]

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
        batch = max(len(node), len(edge))
        nodes = np.zeros((STATES, self.nodes + 1, batch))  # the padding: a zero-cost node, ...
        nodes[:, :-1] = node.transpose(2, 1, 0)
        edges = np.empty((STATES, STATES, self.edges + 2, batch))  # ... the identity and a zero hop
        edges[:, :, :-2] = edge.transpose(2, 3, 1, 0)
        edges[:, :, -2] = IDENTITY[:, :, None]
        edges[:, :, -1] = 0.0
        matrices, pointers = self._paths(nodes, edges)
        blocks = matrices[:, :, :, 0]
        for q in range(1, self.width):  # the paths of a block add up in order (§5.2)
            blocks = blocks + matrices[:, :, :, q]
        states = np.zeros((self.nodes + 1, batch), int)
        if batch < NUMPY_CHAIN_ROWS:
            rows = [_chain(n, b) for n, b in zip(nodes[:, self.chain].T.reshape(batch, -1).tolist(),
                                                 blocks.T.reshape(batch, -1).tolist())]
            cost = np.array([c for c, _ in rows], float)
            states[self.chain] = np.array([s for _, s in rows], int).T
        else:
            blocks = np.ascontiguousarray(blocks.transpose(2, 1, 0, 3))  # (segments, p, t, B)
            cost, states[self.chain] = _chain_rows(nodes[:, self.chain], blocks)
        self._unwind(states, pointers)
        return cost, states[:-1].T

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
        return matrix.reshape(STATES, STATES, self.segments, self.width, -1), pointers

    def _unwind(self, states: np.ndarray, pointers: list[np.ndarray]) -> None:
        """Fill in the inner nodes' states (nodes + 1, B), given the chain's: ``chain_dp._unwind``
        for every row and path at once, the pointers read as flat arrays."""
        size = np.intp(self.paths * states.shape[1])
        start = states[self.head] * size + np.arange(size).reshape(self.paths, -1)
        state = states[self.tail]
        for j in range(self.length - 1, -1, -1):
            state = pointers[j].take(state * (STATES * size) + start)
            states[self.inner[j]] = state


def _minplus(total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum over the first axis of ``total`` (3, ...) and the first index reaching it (int8),
    as ``min(0)``/``argmin(0)`` would give them: the middle state of a min-plus step (Eq. 9)."""
    v0, v1, v2 = total[0], total[1], total[2]
    low = np.minimum(v0, v1)
    first, last = (v1 < v0).view(np.int8), (v2 < low).view(np.int8)
    return np.minimum(low, v2), np.maximum(first, last + last)


def _chain_rows(nodes: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chain's recursion (Eq. 9) over all rows at once: minimum cost (B,) and states
    (chain nodes, B) for chain node costs (3, chain nodes, B) and block costs (segments, 3, 3, B)
    indexed by (state of head, state of tail). The same additions and ties as :func:`_chain`."""
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
    return best, np.array(states[::-1])


def _chain(nodes: list[float], blocks: list[float]) -> tuple[float, list[int]]:
    """The chain's recursion (Eq. 9) for one row over Python floats (chain_dp.solve's loop).

    ``nodes[3k + s]``: cost of state s of the k-th chain node; ``blocks[9k + 3p + s]``: cost of
    the k-th block from state p to state s. Ties go to the lowest state, as numpy's argmin.
    """
    c0, c1, c2 = nodes[0:3]
    history = []
    flat_nodes, flat_blocks = iter(nodes[3:]), iter(blocks)
    for (a0, a1, a2, b0, b1, b2, d0, d1, d2), (n0, n1, n2) in zip(zip(*[flat_blocks] * 9),  # 9 at a time
                                                                   zip(*[flat_nodes] * 3)):
        # for each state s of the next node: the best state of this one, the first of equal minima
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
