"""Accelerators, links, the topology graph and groups of a multi-accelerator system.

Everything here is SI: FLOP/s, bytes, bytes/s, seconds. Problem files speak in named units
(``*_gbps``, ``*_us``); :mod:`optmap.units` converts at the edge.

* :class:`System` — the built system: ``devices`` (index = device id), ``groups`` (contiguous
  device-id ranges in the order of the group specs), and ``graph``, a :class:`networkx.Graph` whose
  device nodes are the ints ``0..count-1`` (attribute ``"accelerator"``) and whose other nodes are
  switches named by strings (``"switch0"``). Every edge carries ``bandwidth`` (B/s) and ``latency``
  (s). Topology builders (plugins, e.g. ``optmap.plugins.hardware``) create systems.

Routing model (documented once, used by every cost model):

* Traffic between two devices follows a **minimum-hop path**. Among several minimum-hop paths,
  :meth:`System.path_bandwidth` takes the widest one (largest bottleneck) and
  :meth:`System.path_latency` the quickest one (smallest latency sum); both are deterministic.
* :meth:`System.path_bandwidth` is a per-flow rate: the bottleneck link on the path, also capped by
  both endpoints' injection bandwidth (``Accelerator.network_bandwidth``). Link contention between
  concurrent flows is not modelled here; cost models that need it account for it themselves.
* Switches are non-blocking and add no latency of their own.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import networkx as nx

from optmap.errors import OptmapError
from optmap.system.accelerator import Accelerator, _check_positive
from optmap.system.groups import Group
from optmap.system.routing import Route, shortest_route
from optmap.units import (
    bytes_per_s_to_gBps,
    bytes_per_s_to_gbps,
    bytes_to_gib,
    flops_to_tflops,
)

# Cached device-pair routes per system; cleared when it grows past this (1024 devices ≈ 5e5 pairs).
_ROUTE_CACHE_MAX = 1 << 18


@dataclass(frozen=True)
class Link:
    """One direct link: ``bandwidth`` in B/s, ``latency`` in s."""

    bandwidth: float
    latency: float



def device_graph(devices: Sequence[Accelerator]) -> nx.Graph:
    """A graph holding the device nodes ``0..len-1`` (attribute ``accelerator``) and no edges."""
    g = nx.Graph()
    g.add_nodes_from((i, {"accelerator": acc}) for i, acc in enumerate(devices))
    return g




@dataclass(frozen=True, eq=False)
class System:
    """A built system of accelerators; see the module docstring for the graph and routing model.

    ``params`` records the topology's resolved options (e.g. ``{"shape": (4, 4)}``) for reports
    and for cost models that need the geometry.
    """

    devices: tuple[Accelerator, ...]
    groups: tuple[Group, ...]
    graph: nx.Graph = field(repr=False)
    topology: str = "custom"
    params: Mapping[str, Any] = field(default_factory=dict)
    _routes: dict = field(default_factory=dict, init=False, repr=False)
    _subsets: dict = field(default_factory=dict, init=False, repr=False)
    _group_index: tuple[int, ...] = field(default=(), init=False, repr=False)
    _kinds: tuple[Accelerator, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "devices", tuple(self.devices))
        set_(self, "groups", tuple(self.groups))
        set_(self, "params", MappingProxyType(dict(self.params)))
        where = f"system '{self.topology}'"
        n = len(self.devices)
        if n == 0:
            raise OptmapError(f"{where}: has no devices")
        for i, acc in enumerate(self.devices):
            if not isinstance(acc, Accelerator):
                raise OptmapError(f"{where}: device {i} is not an Accelerator")
        owner = [-1] * n
        for gi, grp in enumerate(self.groups):
            if not isinstance(grp, Group):
                raise OptmapError(f"{where}: groups must be Group objects")
            for d in grp.devices:
                if not (isinstance(d, int) and 0 <= d < n):
                    raise OptmapError(f"{where}: group '{grp.name}' lists unknown device {d!r}")
                if owner[d] != -1:
                    raise OptmapError(f"{where}: device {d} belongs to two groups")
                if self.devices[d] != grp.accelerator:
                    raise OptmapError(
                        f"{where}: device {d} is a '{self.devices[d].name}' but group "
                        f"'{grp.name}' holds '{grp.accelerator.name}'"
                    )
                owner[d] = gi
        if -1 in owner:
            raise OptmapError(f"{where}: device {owner.index(-1)} belongs to no group")
        set_(self, "_group_index", tuple(owner))
        set_(self, "_kinds", tuple(dict.fromkeys(self.devices)))
        self._validate_graph(where)

    def _validate_graph(self, where: str) -> None:
        g = self.graph
        if not isinstance(g, nx.Graph) or g.is_directed() or g.is_multigraph():
            raise OptmapError(f"{where}: graph must be an undirected networkx.Graph")
        n = len(self.devices)
        for node, data in g.nodes(data=True):
            if isinstance(node, bool) or not isinstance(node, (int, str)):
                raise OptmapError(f"{where}: graph node {node!r} must be a device id or a switch name")
            if isinstance(node, int):
                if not 0 <= node < n:
                    raise OptmapError(f"{where}: graph node {node} is not a device id (0..{n - 1})")
                if data.get("accelerator") != self.devices[node]:
                    raise OptmapError(f"{where}: graph node {node} lacks its 'accelerator' attribute")
        missing = [i for i in range(n) if i not in g]
        if missing:
            raise OptmapError(f"{where}: device {missing[0]} is not in the graph")
        for u, v, data in g.edges(data=True):
            if u == v:
                raise OptmapError(f"{where}: self-loop on node {u!r}")
            _check_positive(f"{where}: link ({u!r}, {v!r})", "bandwidth", data.get("bandwidth"))
            _check_positive(f"{where}: link ({u!r}, {v!r})", "latency", data.get("latency"), allow_zero=True)
        if n > 1:
            reach = nx.node_connected_component(g, 0)
            cut = [i for i in range(n) if i not in reach]
            if cut:
                raise OptmapError(f"{where}: device {cut[0]} cannot reach device 0; the graph is disconnected")

    def __getstate__(self) -> dict:
        # MappingProxyType does not pickle; caches are rebuilt on demand (for multiprocessing / dask).
        state = dict(self.__dict__)
        state["params"] = dict(state["params"])
        state["_routes"], state["_subsets"] = {}, {}
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        state["params"] = MappingProxyType(state["params"])
        self.__dict__.update(state)

    # -- basic facts ---------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """Number of devices."""
        return len(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    @property
    def is_homogeneous(self) -> bool:
        """True when every device is the same accelerator kind."""
        return len(self.kinds()) == 1

    def kinds(self) -> tuple[Accelerator, ...]:
        """The distinct accelerator kinds, in order of first appearance."""
        return self._kinds

    def group_of(self, device: int) -> Group:
        """The group holding ``device``."""
        return self.groups[self._group_index[self._check_device(device)]]

    def _check_device(self, d: Any) -> int:
        """``d`` as a device id (ints and numpy integers), or an OptmapError."""
        try:
            if isinstance(d, bool):
                raise TypeError
            i = operator.index(d)
        except TypeError:
            i = -1
        if not 0 <= i < len(self.devices):
            raise OptmapError(
                f"system '{self.topology}': no device {d!r}; devices are 0..{len(self.devices) - 1}"
            )
        return i

    def link(self, a: int, b: int) -> Link:
        """The direct link between devices (or switches) ``a`` and ``b``; OptmapError if none."""
        a = a if isinstance(a, str) else self._check_device(a)
        b = b if isinstance(b, str) else self._check_device(b)
        data = self.graph.get_edge_data(a, b)
        if data is None:
            raise OptmapError(
                f"system '{self.topology}': {a!r} and {b!r} are not directly linked "
                f"(use path_bandwidth / path_latency for multi-hop routes)"
            )
        return Link(float(data["bandwidth"]), float(data["latency"]))

    # -- routing -------------------------------------------------------------------------------

    def _route(self, a: int, b: int) -> Route:
        a, b = self._check_device(a), self._check_device(b)
        key = (a, b) if a <= b else (b, a)
        route = self._routes.get(key)
        if route is None:
            route = shortest_route(self.graph.adj, *key, where=f"system '{self.topology}'")
            if len(self._routes) >= _ROUTE_CACHE_MAX:
                self._routes.clear()
            self._routes[key] = route
        return route

    def hops(self, a: int, b: int) -> int:
        """Number of links on a minimum-hop path (0 for ``a == b``; switches count as nodes)."""
        return self._route(a, b).hops

    def path_bandwidth(self, a: int, b: int) -> float:
        """Per-flow bandwidth (B/s) from ``a`` to ``b``: the bottleneck of the widest min-hop path,
        capped by both endpoints' ``network_bandwidth``. ``inf`` for ``a == b`` (no transfer)."""
        a, b = self._check_device(a), self._check_device(b)
        if a == b:
            return math.inf
        return min(
            self._route(a, b).bandwidth,
            self.devices[a].network_bandwidth,
            self.devices[b].network_bandwidth,
        )

    def path_latency(self, a: int, b: int) -> float:
        """Latency (s) from ``a`` to ``b``: the smallest sum of link latencies over min-hop paths."""
        return self._route(a, b).latency

    def _subset(self, devices: Sequence[int]) -> tuple[float, float]:
        ring = tuple(self._check_device(d) for d in devices)
        cached = self._subsets.get(ring)
        if cached is not None:
            return cached
        if not ring:
            raise OptmapError(f"system '{self.topology}': an empty device set has no bandwidth")
        if len(set(ring)) != len(ring):
            raise OptmapError(f"system '{self.topology}': device set {list(ring)} repeats a device")
        if len(ring) == 1:
            result = (math.inf, 0.0)
        else:
            pairs = list(zip(ring, ring[1:] + ring[:1]))
            if len(ring) == 2:
                pairs = pairs[:1]
            result = (
                min(self.path_bandwidth(u, v) for u, v in pairs),
                max(self.path_latency(u, v) for u, v in pairs),
            )
        if len(self._subsets) >= 4096:
            self._subsets.clear()
        self._subsets[ring] = result
        return result

    def subset_bandwidth(self, devices: Sequence[int] | None = None) -> float:
        """Bottleneck :meth:`path_bandwidth` between consecutive devices of a ring over ``devices``
        (in the order given, wrapping around; all devices when ``None``). Ring collectives run at
        this rate. ``inf`` for a single device."""
        return self._subset(range(self.count) if devices is None else devices)[0]

    def subset_latency(self, devices: Sequence[int] | None = None) -> float:
        """Largest :meth:`path_latency` between consecutive devices of the same ring (the per-step
        α of a ring collective over ``devices``)."""
        return self._subset(range(self.count) if devices is None else devices)[1]

    # -- reporting -----------------------------------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        """One row per group for a table (human units: TFLOP/s, GiB, GB/s memory, Gb/s network)."""
        rows = []
        for grp in self.groups:
            acc = grp.accelerator
            lo, hi = grp.devices[0], grp.devices[-1]
            contiguous = list(grp.devices) == list(range(lo, hi + 1))
            rows.append(
                {
                    "group": grp.name,
                    "accelerator": acc.name,
                    "count": grp.count,
                    "devices": f"{lo}..{hi}" if contiguous else ",".join(map(str, grp.devices)),
                    "peak TFLOP/s": ", ".join(
                        f"{k}={flops_to_tflops(v):g}" for k, v in acc.peak_flops
                    ),
                    "memory GiB": round(bytes_to_gib(acc.memory_bytes), 3),
                    "memory GB/s": round(bytes_per_s_to_gBps(acc.memory_bandwidth), 3),
                    "network Gb/s": round(bytes_per_s_to_gbps(acc.network_bandwidth), 3),
                    "topology": self.topology,
                }
            )
        return rows

    def __repr__(self) -> str:
        parts = " + ".join(f"{g.count}×{g.accelerator.name}" for g in self.groups)
        return (
            f"System(topology={self.topology!r}, {self.count} devices: {parts}, "
            f"{self.graph.number_of_edges()} links)"
        )
