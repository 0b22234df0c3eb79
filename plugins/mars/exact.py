"""Exact level 2 (note §4.6): minimum of Σ node costs + Σ pairwise re-layout costs over a layer set.

On a chain of layers this is the Viterbi DP of note §4.6, which the core solves
(:func:`optmap.chain_dp.solve`, AccPar Eq. 9); :func:`solve` hands chains to it. A layer set of a
residual or multi-branch network is not a chain: a shortcut joins a block's first and last layer,
the branches of CASIA-SURF meet at a concatenation, and a contiguous range may start or end inside
a block. Those dependency graphs are series-parallel (treewidth ≤ 2), so the same min-plus
recursion runs as variable elimination: repeatedly take a layer with at most two neighbours,
minimise it out (a leaf folds into its neighbour's node cost, a layer between two others becomes
one pairwise table), then recover the argmins backwards. A graph that needs a three-way table
(treewidth > 2) is refused, naming the layer, rather than solved approximately.
"""

from __future__ import annotations

import numpy as np

from optmap import chain_dp
from optmap.errors import OptmapError


def _is_chain(n: int, pairs: dict[tuple[int, int], np.ndarray]) -> bool:
    return set(pairs) == {(i, i + 1) for i in range(n - 1)}


def solve(node: np.ndarray, pairs: dict[tuple[int, int], np.ndarray]) -> tuple[float, np.ndarray]:
    """Minimum and argmin states of ``Σ_i node[i, s_i] + Σ_(u,v) pairs[(u,v)][s_u, s_v]``.

    ``node`` is (n, S) (``inf`` forbids a state); ``pairs`` maps (u, v), u < v, to (S, S) tables
    indexed (state of u, state of v); several tables on one pair add up.
    """
    n = len(node)
    if _is_chain(n, pairs):
        nodes = list(range(n))
        segments = [chain_dp.Segment() for _ in range(n - 1)]
        best, states = chain_dp.solve(nodes, segments, dict(enumerate(node)), pairs)
        return best, np.array([states[i] for i in nodes], dtype=np.int64)
    return _eliminate(node, pairs)


def _eliminate(node: np.ndarray, pairs: dict[tuple[int, int], np.ndarray]) -> tuple[float, np.ndarray]:
    unary = {i: node[i].astype(float).copy() for i in range(len(node))}
    table: dict[tuple[int, int], np.ndarray] = {}
    for (u, v), t in pairs.items():
        key = (u, v) if u < v else (v, u)
        t = t if u < v else t.T
        table[key] = table[key] + t if key in table else t.astype(float)
    neighbours: dict[int, set[int]] = {i: set() for i in unary}
    for u, v in table:
        neighbours[u].add(v)
        neighbours[v].add(u)

    def pair(a: int, b: int) -> np.ndarray:  # table oriented (state of a, state of b)
        return table[(a, b)] if a < b else table[(b, a)].T

    steps, total = [], 0.0
    while unary:
        x = min(unary, key=lambda i: (len(neighbours[i]), i))
        nbrs = sorted(neighbours[x])
        cost = unary.pop(x)
        if not nbrs:
            arg = int(np.argmin(cost))
            total += float(cost[arg])
            steps.append((x, (), arg))
        elif len(nbrs) == 1:
            (a,) = nbrs
            t = pair(a, x) + cost[None, :]
            unary[a] = unary[a] + t.min(1)
            steps.append((x, (a,), t.argmin(1)))
        elif len(nbrs) == 2:
            a, b = nbrs
            t = pair(a, x)[:, None, :] + pair(b, x)[None, :, :] + cost[None, None, :]
            merged = t.min(2)
            key = (a, b)
            table[key] = table[key] + merged if key in table else merged
            neighbours[a].add(b)
            neighbours[b].add(a)
            steps.append((x, (a, b), t.argmin(2)))
        else:
            raise OptmapError(f"exact level 2: layer {x} joins {len(nbrs)} others after elimination "
                              f"(the layer set is not series-parallel); use inner = \"ga\"")
        for a in nbrs:
            neighbours[a].discard(x)
            table.pop((a, x) if a < x else (x, a), None)
        del neighbours[x]
    states = np.zeros(len(node), dtype=np.int64)
    for x, nbrs, arg in reversed(steps):
        states[x] = arg if not nbrs else arg[tuple(states[a] for a in nbrs)]
    return total, states
