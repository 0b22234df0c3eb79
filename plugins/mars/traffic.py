"""Traffic between accelerator sets and to the host (note §3.6), per level-1 plan.

Every tensor a layer of set A sends to layers of a later set B crosses once (the largest slice
any consumer in B needs), from set to set; network inputs come from the host to the sets that
read them and outputs no mapped layer consumes go back to the host (note §6.13: both counted,
``host_io``). One transfer costs ``α + bytes / (k · B)``: B is the narrowest device-pair bandwidth
between the two sets (inside an F1 group 8 Gb/s; across groups the host path, 2 Gb/s) or the
narrowest host link of the set, α the largest path latency, and k the parallel links: 1
(``inter_set_links = "one"``, conservative, note §6.12) or the smaller set's size ("min-set").

Each transfer is charged to the set it enters (host outputs to the set that sends them), so a
pipelined reading (``aggregate = "max"``) can attribute it to a stage.
"""

from __future__ import annotations

import numpy as np

from optmap import schedule
from optmap.errors import OptmapError
from optmap.system import System

from .layers import LayerGraph
from .topology import HOST


class Traffic:
    """Inter-set and host transfer times of level-1 plans on one system and layer graph."""

    def __init__(self, graph: LayerGraph, system: System, candidates, bytes_per_element: int,
                 links: str = "one", host_io: bool = True) -> None:
        self.graph, self.b, self.host_io = graph, bytes_per_element, host_io
        n = system.count
        bw, lat = np.full((n, n), np.inf), np.zeros((n, n))
        for a in range(n):
            for b in range(n):
                if a != b:
                    bw[a, b], lat[a, b] = system.path_bandwidth(a, b), system.path_latency(a, b)
        host_bw, host_lat = np.full(n, np.inf), np.zeros(n)
        if host_io:
            if HOST not in system.graph:
                raise OptmapError(f"system '{system.topology}' has no '{HOST}' node for MARS's host transfers; use "
                                  f"topology f1-16xlarge or h2h-cluster, or set [cost] host_io = false")
            for d in range(n):
                data = system.graph.get_edge_data(d, HOST)
                if data is None:
                    raise OptmapError(f"system '{system.topology}': device {d} has no link to the host")
                host_bw[d], host_lat[d] = data["bandwidth"], data["latency"]
        c = len(candidates)
        size = np.array([len(m) for m in candidates], float)
        # per candidate pair: α (largest path latency), k·B (links × narrowest pair bandwidth), note §3.6
        self.alpha, self.rate = np.zeros((c, c)), np.full((c, c), np.inf)
        for i, a in enumerate(candidates):
            for j, b in enumerate(candidates):
                k = 1.0 if links == "one" else min(size[i], size[j])
                self.alpha[i, j] = lat[np.ix_(a, b)].max()
                self.rate[i, j] = k * bw[np.ix_(a, b)].min()
        self.host_alpha = np.array([host_lat[list(m)].max() for m in candidates])
        self.host_rate = np.array([(1.0 if links == "one" else len(m)) * host_bw[list(m)].min() for m in candidates])
        edges = graph.edges
        self.src = np.array([e.src for e in edges], dtype=np.int64)
        self.dst = np.array([e.dst for e in edges], dtype=np.int64)
        self.elems = np.array([e.elems for e in edges], float)
        io = (*graph.host_inputs, *graph.host_outputs)
        self.io_layer = np.array([layer for layer, _ in io], dtype=np.int64)
        self.io_bytes = np.array([elems for _, elems in io], float) * bytes_per_element
        self._cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def per_set(self, sets: tuple[int, ...], bounds: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
        """Seconds of inter-set and of host transfers charged to each set of the plan (inbound;
        host outputs to the set that sends them)."""
        key = (sets, bounds)
        if key in self._cache:
            return self._cache[key]
        k = len(sets)
        owner = schedule.stage_of([a for a, _ in bounds] + [bounds[-1][1] + 1])  # the set of every layer
        cand = np.asarray(sets, dtype=np.int64)
        inter, host = np.zeros(k), np.zeros(k)
        cross = owner[self.src] != owner[self.dst]
        if cross.any():  # one transfer per (producer, receiving set): the largest slice it needs
            src, to, elems = self.src[cross], owner[self.dst[cross]], self.elems[cross]
            order = np.lexsort((-elems, to, src))
            src, to, elems = src[order], to[order], elems[order]
            first = np.ones(len(src), bool)
            first[1:] = (src[1:] != src[:-1]) | (to[1:] != to[:-1])
            a, b = cand[owner[src[first]]], cand[to[first]]
            np.add.at(inter, to[first], schedule.transfer_time(elems[first] * self.b, self.rate[a, b], self.alpha[a, b]))
        if self.host_io and len(self.io_layer):
            sender = cand[owner[self.io_layer]]
            np.add.at(host, owner[self.io_layer],
                      schedule.transfer_time(self.io_bytes, self.host_rate[sender], self.host_alpha[sender]))
        if len(self._cache) > 100_000:
            self._cache.clear()
        self._cache[key] = (inter, host)
        return inter, host
