"""AccPar's layer-wise DP (Eq. 9, multi-path blocks §5.2) for a batch of cost tables at once.

The same min-plus recursion as :func:`optmap.chain_dp.solve`, step for step and with the same
ties (lowest state index), so plans and costs are identical; only the bookkeeping differs:

- every path of every multi-path block is independent of the chain's running cost, so all paths
  of one length are solved together, vectorised over the batch and over the paths (numpy);
- the chain itself is a sequence of 3×3 min-plus steps, too small for numpy's per-call cost: it
  runs over plain Python floats, row by row (about a microsecond per step);
- the paths' inner states are then read back for all rows and paths at once.

A batch row is one set of cost tables: one share of a heterogeneous split in AccPar's share
search (the 59 grid points of ``ratio_steps = 60`` are one batch), or a single plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import Graph

STATES = 3


@dataclass(frozen=True)
class _PathGroup:
    """All block paths with the same number of inner nodes, as index arrays."""

    rows: np.ndarray  # (P,) index of each path among all paths
    segment: np.ndarray  # (P,) the segment (block) it belongs to
    first: np.ndarray  # (P,) edge from the block's head to the first inner node (or the tail)
    inner: np.ndarray  # (P, L) inner nodes in order
    hops: np.ndarray  # (P, L) edge leaving each inner node


class ChainDP:
    """The DP of one block graph, solved for a batch of node and edge cost tables."""

    def __init__(self, graph: Graph) -> None:
        edge_of = {}
        for e, (u, v) in enumerate(zip(graph.edge_u.tolist(), graph.edge_v.tolist())):
            edge_of[(u, v)] = e  # the last edge of a pair wins, as in a dict of edge costs
        self.chain = np.array(graph.chain, int)
        self.nodes = len(graph.names)
        paths = []  # (segment, position, inner nodes, edges along the path)
        for k, segment in enumerate(graph.segments):
            head, tail = graph.chain[k], graph.chain[k + 1]
            for position, path in enumerate(segment):
                hops = (head, *path, tail)
                paths.append((k, position, path, [edge_of[(a, b)] for a, b in zip(hops[:-1], hops[1:])]))
        self.paths = len(paths)
        self.groups = []
        for length in sorted({len(p[2]) for p in paths}):
            rows = [i for i, p in enumerate(paths) if len(p[2]) == length]
            self.groups.append(_PathGroup(
                rows=np.array(rows, int),
                segment=np.array([paths[i][0] for i in rows], int),
                first=np.array([paths[i][3][0] for i in rows], int),
                inner=np.array([paths[i][2] for i in rows], int).reshape(len(rows), length),
                hops=np.array([paths[i][3][1:] for i in rows], int).reshape(len(rows), length),
            ))
        # blocks add their paths in order: by position, which segments have one, and which path
        positions = max((p[1] for p in paths), default=-1) + 1
        self.by_position = [
            (np.array([p[0] for p in paths if p[1] == q], int), np.array([i for i, p in enumerate(paths) if p[1] == q], int))
            for q in range(positions)
        ]

    def solve(self, node: np.ndarray, edge: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Minimum cost (B,) and optimal states (B, nodes) for node costs (B, nodes, 3) (``inf``
        forbids a state) and edge costs (B, edges, 3, 3) indexed by (state of tail, state of head)."""
        batch = len(node)
        matrices = np.empty((batch, self.paths, STATES, STATES))
        pointers = []
        for group in self.groups:
            matrix = edge[:, group.first]
            inner_costs, hop_costs = node[:, group.inner, None, :], edge[:, group.hops, None, :, :]
            steps = []
            for j in range(group.inner.shape[1]):  # chain_dp._path_matrix, all paths of the group at once
                total = (matrix + inner_costs[:, :, j])[..., None] + hop_costs[:, :, j]
                steps.append(total.argmin(-2))
                matrix = total.min(-2)
            matrices[:, group.rows] = matrix
            pointers.append(steps)
        segments, first = self.by_position[0]
        blocks = matrices[:, first]  # every block has a first path, in segment order
        for segments, rows in self.by_position[1:]:
            blocks[:, segments] = blocks[:, segments] + matrices[:, rows]
        results = [_chain(row_nodes, row_blocks) for row_nodes, row_blocks
                   in zip(node[:, self.chain].reshape(batch, -1).tolist(), blocks.reshape(batch, -1).tolist())]
        chain_states = np.array([states for _, states in results], int)
        states = np.zeros((batch, self.nodes), int)
        states[:, self.chain] = chain_states
        every = np.arange(batch)[:, None]
        for group, steps in zip(self.groups, pointers):  # chain_dp._unwind for every row and path
            start = chain_states[:, group.segment]
            state = chain_states[:, group.segment + 1]
            across = np.arange(len(group.rows))[None, :]
            for j in range(len(steps) - 1, -1, -1):
                state = steps[j][every, across, start, state]
                states[:, group.inner[:, j]] = state
        return np.array([cost for cost, _ in results], float), states


def _chain(nodes: list[float], blocks: list[float]) -> tuple[float, list[int]]:
    """The chain's min-plus recursion for one row over Python floats (chain_dp.solve's loop).

    ``nodes[3k + s]``: cost of state s of the k-th chain node; ``blocks[9k + 3p + s]``: cost of
    the k-th block from state p to state s. Ties go to the lowest state, as numpy's argmin.
    """
    c0, c1, c2 = nodes[0:3]
    history = []
    for k in range(len(nodes) // 3 - 1):
        a0, a1, a2, b0, b1, b2, d0, d1, d2 = blocks[9 * k:9 * k + 9]
        n0, n1, n2 = nodes[3 * k + 3:3 * k + 6]
        # for each state s of the next node: the best state of this one, the first of equal minima
        v0, v1, v2 = c0 + a0, c1 + b0, c2 + d0
        s0, m0 = (0, v0) if v0 <= v1 and v0 <= v2 else (1, v1) if v1 <= v2 else (2, v2)
        v0, v1, v2 = c0 + a1, c1 + b1, c2 + d1
        s1, m1 = (0, v0) if v0 <= v1 and v0 <= v2 else (1, v1) if v1 <= v2 else (2, v2)
        v0, v1, v2 = c0 + a2, c1 + b2, c2 + d2
        s2, m2 = (0, v0) if v0 <= v1 and v0 <= v2 else (1, v1) if v1 <= v2 else (2, v2)
        c0, c1, c2 = m0 + n0, m1 + n1, m2 + n2
        history.append((s0, s1, s2))
    cost = (c0, c1, c2)
    state = min(range(STATES), key=cost.__getitem__)
    best = cost[state]
    states = [state]
    for arg in reversed(history):
        state = arg[state]
        states.append(state)
    return best, states[::-1]
