"""Layer-wise dynamic programming over a series-parallel view of a workload (min-plus algebra).

The view is a sequence of nodes; between two consecutive nodes stands either a plain edge or a
block of independent paths (a fork node, several chains of nodes, a merge node). Each node has a
cost per state, each edge a cost per (state of its tail, state of its head). A block's paths are
solved exactly for every pair of end states and added (they only meet at the ends), which is the
multi-path treatment of AccPar §5.2; the whole view is then a chain, solved as in AccPar Eq. 9.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Segment:
    """What stands between two consecutive nodes: ``paths`` of inner nodes (empty path = edge)."""

    paths: tuple[tuple[int, ...], ...] = ((),)


def _minplus(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S×S) ⊗ (S×S) in min-plus algebra, with the argmin of the middle state."""
    total = left[:, :, None] + right[None, :, :]
    return total.min(1), total.argmin(1)


def _path_matrix(path, head, tail, node_cost, edge_cost):
    """Cost of a path for every (state of head, state of tail), and backpointers per inner node."""
    nodes = (head, *path, tail)
    matrix = edge_cost[(nodes[0], nodes[1])].copy()
    pointers = []
    for k, inner in enumerate(path):
        matrix = matrix + node_cost[inner][None, :]
        matrix, arg = _minplus(matrix, edge_cost[(inner, nodes[k + 2])])
        pointers.append(arg)
    return matrix, pointers


def _unwind(path, pointers, start: int, end: int, states: dict[int, int]) -> None:
    """Recover the states of a path's inner nodes for fixed end states."""
    state = end
    for inner, arg in zip(reversed(path), reversed(pointers)):
        state = int(arg[start, state])
        states[inner] = state


def solve(
    nodes: Sequence[int],
    segments: Sequence[Segment],
    node_cost: dict[int, np.ndarray],
    edge_cost: dict[tuple[int, int], np.ndarray],
) -> tuple[float, dict[int, int]]:
    """Minimum total cost and the optimal state of every node.

    ``nodes`` are the chain's nodes in order; ``segments[k]`` joins ``nodes[k]`` to
    ``nodes[k+1]``; ``node_cost[n]`` is an (S,) array (``inf`` forbids a state);
    ``edge_cost[(u, v)]`` an (S, S) array indexed by (state of u, state of v). The first node's
    incoming cost is zero (AccPar Eq. 9: c(L_0, t) = 0).
    """
    cost = node_cost[nodes[0]].astype(float)
    history = []
    for k, segment in enumerate(segments):
        head, tail = nodes[k], nodes[k + 1]
        block = 0.0
        path_pointers = []
        for path in segment.paths:
            matrix, pointers = _path_matrix(path, head, tail, node_cost, edge_cost)
            block = block + matrix
            path_pointers.append(pointers)
        total = cost[:, None] + block
        arg = total.argmin(0)
        cost = total.min(0) + node_cost[tail]
        history.append((arg, path_pointers))
    state = int(np.argmin(cost))
    best = float(cost[state])
    states = {nodes[-1]: state}
    for k in range(len(segments) - 1, -1, -1):
        arg, path_pointers = history[k]
        previous = int(arg[state])
        for path, pointers in zip(segments[k].paths, path_pointers):
            _unwind(path, pointers, previous, state, states)
        state = previous
        states[nodes[k]] = state
    return best, states
