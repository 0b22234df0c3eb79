"""Routing over a system's graph: the widest and the quickest of the minimum-hop paths."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from optmap.errors import OptmapError


@dataclass(frozen=True)
class Route:
    """A minimum-hop route between two nodes."""

    hops: int
    bandwidth: float  # bottleneck link bandwidth of the widest min-hop path (not endpoint-capped)
    latency: float  # smallest latency sum over min-hop paths


def shortest_route(adj, a: Any, b: Any, where: str) -> Route:
    """Widest / quickest min-hop route by a layered bidirectional BFS.

    Each side records BFS predecessors; when a newly found layer touches the other side, the
    meeting nodes are exactly the nodes at that depth on every shortest path, so the best
    bottleneck (max-min) and latency (min-sum) are combined over them.
    """
    if a == b:
        return Route(0, math.inf, 0.0)
    direct = adj[a].get(b)
    if direct is not None:
        return Route(1, float(direct["bandwidth"]), float(direct["latency"]))
    dist = ({a: 0}, {b: 0})
    preds: tuple[dict, dict] = ({a: ()}, {b: ()})
    order: tuple[list, list] = ([a], [b])
    front = [[a], [b]]
    meet: list = []
    while not meet:
        cost = [sum(len(adj[u]) for u in f) for f in front]
        side = 0 if cost[0] <= cost[1] else 1
        if not front[side]:
            raise OptmapError(f"{where}: no path between devices {a} and {b}")
        d_s, p_s, other = dist[side], preds[side], dist[1 - side]
        nxt = []
        for u in front[side]:
            du = d_s[u] + 1
            for v in adj[u]:
                dv = d_s.get(v)
                if dv is None:
                    d_s[v] = du
                    p_s[v] = [u]
                    nxt.append(v)
                elif dv == du:
                    p_s[v].append(u)
        front[side] = nxt
        order[side].extend(nxt)
        meet = [v for v in nxt if v in other]
    best_bw: list[dict] = [{}, {}]
    best_lat: list[dict] = [{}, {}]
    for s in (0, 1):
        bw, lat, p_s = best_bw[s], best_lat[s], preds[s]
        start = order[s][0]
        bw[start], lat[start] = math.inf, 0.0
        for v in order[s][1:]:
            b_v, l_v = 0.0, math.inf
            for u in p_s[v]:
                e = adj[u][v]
                b_v = max(b_v, min(bw[u], e["bandwidth"]))
                l_v = min(l_v, lat[u] + e["latency"])
            bw[v], lat[v] = b_v, l_v
    m0 = meet[0]
    hops = dist[0][m0] + dist[1][m0]
    bandwidth = max(min(best_bw[0][m], best_bw[1][m]) for m in meet)
    latency = min(best_lat[0][m] + best_lat[1][m] for m in meet)
    return Route(hops, float(bandwidth), float(latency))

