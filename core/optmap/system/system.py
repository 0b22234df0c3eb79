"""`System`: the accelerators, groups and topology of a multi-accelerator system.

Everything here is SI: FLOP/s, bytes, bytes/s, seconds. Problem files speak in named units
(``*_gbps``, ``*_us``); :mod:`optmap.units` converts at the edge.

* :class:`System` — the built system: ``devices`` (index = device id; a :class:`DeviceKinds`,
  which reads like a tuple of accelerators and stores runs of one kind), ``groups`` (device-id
  ranges in the order of the group specs), and ``graph``, a :class:`networkx.Graph` whose device
  nodes are the ints ``0..count-1`` (attribute ``"accelerator"``) and whose other nodes are
  switches named by strings (``"switch0"``). Every edge carries ``bandwidth`` (B/s) and
  ``latency`` (s). Topology builders (plugins, e.g. ``optmap.plugins.hardware``) create systems.
* Systems scale with groups, not devices: a topology may hand over a
  :class:`~optmap.system.graph.GraphRecipe` instead of a graph, and the graph is built the first
  time routing asks for it (refused with one line above
  :data:`~optmap.system.graph.GRAPH_SIZE_LIMIT`). Counting, groups, kinds and ``describe`` never
  build it, so 2^30 accelerators cost what 2 do for a cost model that works on groups.

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

import bisect
import math
import operator
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from optmap.errors import OptmapError
from optmap.system.accelerator import Accelerator
from optmap.system.graph import GraphRecipe, Link, build_graph, validate_graph
from optmap.system.groups import DeviceKinds, Group
from optmap.system.routing import Route, shortest_route
from optmap.units import bytes_per_s_to_gbps, bytes_per_s_to_gBps, bytes_to_gib, flops_to_tflops

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

# Cached device-pair routes per system; cleared when it grows past this (1024 devices ≈ 5e5 pairs).
_ROUTE_CACHE_MAX = 1 << 18


class System:
    """A built system of accelerators; see the module docstring for the graph and routing model.

    ``graph`` is a networkx graph, or a :class:`~optmap.system.graph.GraphRecipe` that builds it
    when first needed. ``params`` records the topology's resolved options (e.g.
    ``{"shape": (4, 4)}``) for reports and for cost models that need the geometry. Read-only.
    """

    def __init__(
        self,
        devices: Sequence[Accelerator],
        groups: Sequence[Group],
        graph: "nx.Graph | GraphRecipe",
        topology: str = "custom",
        params: Mapping[str, Any] | None = None,
    ) -> None:
        set_ = object.__setattr__
        where = f"system '{topology}'"
        if not isinstance(devices, DeviceKinds):
            for i, acc in enumerate(devices):
                if not isinstance(acc, Accelerator):
                    raise OptmapError(f"{where}: device {i} is not an Accelerator")
        elif not all(isinstance(kind, Accelerator) for kind, _ in devices.runs):
            raise OptmapError(f"{where}: devices must be Accelerators")
        set_(self, "devices", DeviceKinds.of(devices))
        set_(self, "groups", tuple(groups))
        set_(self, "topology", topology)
        set_(self, "params", MappingProxyType(dict(params or {})))
        set_(self, "_routes", {})
        set_(self, "_subsets", {})
        if len(self.devices) == 0:
            raise OptmapError(f"{where}: has no devices")
        starts, owners = self._index_groups(where)
        set_(self, "_span_starts", starts)
        set_(self, "_span_groups", owners)
        set_(self, "_kinds", self.devices.kinds())
        if isinstance(graph, GraphRecipe):
            set_(self, "_recipe", graph)
            set_(self, "_graph", None)
        else:
            validate_graph(graph, self.devices, where)
            set_(self, "_recipe", None)
            set_(self, "_graph", graph)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"System is read-only: cannot set '{name}'")

    def _index_groups(self, where: str) -> tuple[list[int], list[int]]:
        """Check that the groups cover every device once with the right accelerator; return the
        start of each run of ids and its group, sorted by start (for :meth:`group_of`)."""
        n = len(self.devices)
        spans: list[tuple[int, int, int]] = []
        for gi, grp in enumerate(self.groups):
            if not isinstance(grp, Group):
                raise OptmapError(f"{where}: groups must be Group objects")
            ids = grp.devices
            if ids.contiguous and len(ids):
                start, stop = ids[0], ids[-1] + 1
                if start < 0 or stop > n:
                    raise OptmapError(f"{where}: group '{grp.name}' lists unknown device {start if start < 0 else n}")
                if self.devices.kind_over(start, stop) != grp.accelerator:
                    d = next(d for d in ids if self.devices[d] != grp.accelerator)
                    self._wrong_kind(where, d, grp)
                spans.append((start, stop, gi))
                continue
            for d in ids:
                if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < n:
                    raise OptmapError(f"{where}: group '{grp.name}' lists unknown device {d!r}")
                if self.devices[d] != grp.accelerator:
                    self._wrong_kind(where, d, grp)
                spans.append((d, d + 1, gi))
        spans.sort()
        covered = 0
        for start, stop, _ in spans:
            if start < covered:
                raise OptmapError(f"{where}: device {start} belongs to two groups")
            if start > covered:
                break
            covered = stop
        if covered < n:
            raise OptmapError(f"{where}: device {covered} belongs to no group")
        return [s for s, _, _ in spans], [g for _, _, g in spans]

    def _wrong_kind(self, where: str, d: int, grp: Group) -> None:
        raise OptmapError(
            f"{where}: device {d} is a '{self.devices[d].name}' but group "
            f"'{grp.name}' holds '{grp.accelerator.name}'"
        )

    def __getstate__(self) -> dict:
        # MappingProxyType does not pickle; caches are rebuilt on demand (for multiprocessing / dask),
        # and so is a graph that a recipe can build again.
        state = dict(self.__dict__)
        state["params"] = dict(state["params"])
        state["_routes"], state["_subsets"] = {}, {}
        if state["_recipe"] is not None:
            state["_graph"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        state["params"] = MappingProxyType(state["params"])
        self.__dict__.update(state)

    # -- basic facts ---------------------------------------------------------------------------

    @property
    def graph(self) -> "nx.Graph":
        """The device graph (built on first use from the topology's recipe)."""
        if self._graph is None:
            graph = build_graph(self._recipe, f"system '{self.topology}'", self.count)
            validate_graph(graph, self.devices, f"system '{self.topology}'")
            object.__setattr__(self, "_graph", graph)
        return self._graph

    @property
    def links(self) -> int:
        """Number of links in the graph (known without building it)."""
        return self._recipe.links if self._graph is None else self._graph.number_of_edges()

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
        d = self._check_device(device)
        return self.groups[self._span_groups[bisect.bisect_right(self._span_starts, d) - 1]]

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
        if len(devices) > 1:
            self.graph  # routing needs it: built now, or one line before a huge ring is listed
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
            rows.append(
                {
                    "group": grp.name,
                    "accelerator": acc.name,
                    "count": grp.count,
                    "devices": f"{lo}..{hi}" if grp.devices.contiguous else ",".join(map(str, grp.devices)),
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
        return f"System(topology={self.topology!r}, {self.count} devices: {parts}, {self.links} links)"
