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

from optmap.errors import OptmapError
from optmap.system import System

from .layers import LayerGraph
from .topology import HOST


class Traffic:
    """Inter-set and host transfer times of level-1 plans on one system and layer graph."""

    def __init__(self, graph: LayerGraph, system: System, candidates, bytes_per_element: int,
                 links: str = "one", host_io: bool = True) -> None:
        self.graph, self.candidates, self.b = graph, candidates, bytes_per_element
        self.links, self.host_io = links, host_io
        n = system.count
        self.bw = np.full((n, n), np.inf)
        self.lat = np.zeros((n, n))
        for a in range(n):
            for b in range(n):
                if a != b:
                    self.bw[a, b] = system.path_bandwidth(a, b)
                    self.lat[a, b] = system.path_latency(a, b)
        self.host_bw = np.full(n, np.inf)
        self.host_lat = np.zeros(n)
        if host_io:
            if HOST not in system.graph:
                raise OptmapError(f"system '{system.topology}' has no '{HOST}' node for MARS's host transfers; use "
                                  f"topology f1-16xlarge or h2h-cluster, or set [cost] host_io = false")
            for d in range(n):
                data = system.graph.get_edge_data(d, HOST)
                if data is None:
                    raise OptmapError(f"system '{system.topology}': device {d} has no link to the host")
                self.host_bw[d], self.host_lat[d] = data["bandwidth"], data["latency"]
        self._cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def _k(self, a: tuple[int, ...], b: tuple[int, ...] | None = None) -> int:
        if self.links == "one":
            return 1
        return len(a) if b is None else min(len(a), len(b))

    def _between(self, a: tuple[int, ...], b: tuple[int, ...], nbytes: float) -> float:
        bw = self.bw[np.ix_(a, b)].min()
        return float(self.lat[np.ix_(a, b)].max() + nbytes / (self._k(a, b) * bw))  # note §3.6

    def _host(self, a: tuple[int, ...], nbytes: float) -> float:
        return float(self.host_lat[list(a)].max() + nbytes / (self._k(a) * self.host_bw[list(a)].min()))

    def per_set(self, sets: tuple[int, ...], bounds: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
        """Seconds of inter-set and of host transfers charged to each set of the plan (inbound;
        host outputs to the set that sends them)."""
        key = (sets, bounds)
        if key in self._cache:
            return self._cache[key]
        owner = np.empty(len(self.graph), dtype=np.int64)
        for i, (first, last) in enumerate(bounds):
            owner[first:last + 1] = i
        devices = [self.candidates[c] for c in sets]
        inter, host = np.zeros(len(sets)), np.zeros(len(sets))
        crossing: dict[tuple[int, int], int] = {}
        for e in self.graph.edges:
            a, b = owner[e.src], owner[e.dst]
            if a != b:
                crossing[(e.src, b)] = max(crossing.get((e.src, b), 0), e.elems)
        for (src, b), elems in crossing.items():
            inter[b] += self._between(devices[owner[src]], devices[b], elems * self.b)
        if self.host_io:
            for layer, elems in (*self.graph.host_inputs, *self.graph.host_outputs):
                host[owner[layer]] += self._host(devices[owner[layer]], elems * self.b)
        if len(self._cache) > 100_000:
            self._cache.clear()
        self._cache[key] = (inter, host)
        return inter, host
