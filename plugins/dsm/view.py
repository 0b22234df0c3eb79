"""The layer graph as a chain of nodes and fork/merge blocks, the shape :func:`optmap.chain_dp.solve` solves.

Residual shortcuts fold into the layer that adds them (the add is its SFP work), so a ResNet block
is a fork (the block's input producer), two paths (the main convolutions, and the downsample or
nothing) and a merge (the last convolution). Several network inputs (GNMT's source and target
sentences) hang from a virtual source node, so an encoder and a decoder are two paths that merge
at the attention. Forks must re-merge at one node without nested forks (as in
:meth:`optmap.workload.Workload.block_view`); other graphs get a one-line error.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from optmap.chain_dp import Segment
from optmap.errors import OptmapError

SOURCE = "(inputs)"


@dataclass(frozen=True)
class ChainView:
    """``nodes`` in order, ``segments[k]`` between ``nodes[k]`` and ``nodes[k+1]``, ``edges`` every
    (u, v) pair the DP prices (consecutive nodes of each path). Names are layer names or SOURCE."""

    nodes: tuple[str, ...]
    segments: tuple[tuple[tuple[str, ...], ...], ...]
    edges: tuple[tuple[str, str], ...]

    def for_solver(self, index: dict[str, int]) -> tuple[list[int], list[Segment]]:
        """Integer node ids and :class:`optmap.chain_dp.Segment` objects for :func:`optmap.chain_dp.solve`."""
        return ([index[n] for n in self.nodes],
                [Segment(tuple(tuple(index[n] for n in path) for path in seg)) for seg in self.segments])


def chain_view(graph: nx.DiGraph, name: str = "workload") -> ChainView:
    """The series-parallel view of ``graph`` (a DAG of layer names)."""
    g = graph.copy()
    roots = [n for n in g.nodes if g.in_degree(n) == 0]
    if len(roots) > 1:
        g.add_edges_from((SOURCE, r) for r in roots)
        start = SOURCE
    else:
        start = roots[0]

    def fail(detail: str) -> OptmapError:
        return OptmapError(f"the dsm engine's chain DP needs {name} to be series-parallel (forks re-merge at one "
                           f"layer, no nested forks): {detail}; use a generic engine (ga, optuna, random)")

    order = {n: i for i, n in enumerate(graph.nodes)}
    nodes, segments, edges = [start], [], []
    seen = {start}
    u = start
    while g.out_degree(u):
        succ = sorted(g.successors(u), key=order.__getitem__)
        if len(succ) == 1 and g.in_degree(succ[0]) == 1:
            v = succ[0]
            segments.append(((),))
            edges.append((u, v))
        else:
            paths, merge = [], None
            for first in succ:
                path, v = [], first
                while g.in_degree(v) == 1:
                    if g.out_degree(v) != 1:
                        raise fail(f"'{v}' inside a branch of '{u}' has {g.out_degree(v)} consumers")
                    path.append(v)
                    v = next(iter(g.successors(v)))
                if merge is None:
                    merge = v
                elif v != merge:
                    raise fail(f"branches from '{u}' merge at both '{merge}' and '{v}'")
                paths.append(tuple(path))
                chain = (u, *path, v)
                edges.extend(zip(chain, chain[1:]))
                seen.update(path)
            preds = set(g.predecessors(merge))
            ends = {p[-1] if p else u for p in paths}
            if preds != ends:
                raise fail(f"'{merge}' merges branches that did not all fork from '{u}'")
            segments.append(tuple(paths))
            v = merge
        nodes.append(v)
        seen.add(v)
        u = v
    missing = [n for n in g.nodes if n not in seen]
    if missing:
        raise fail(f"layers {missing[:3]} are off the main path")
    return ChainView(tuple(nodes), tuple(segments), tuple(edges))
