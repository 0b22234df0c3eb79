"""Accelerators, links, the topology graph and groups of a multi-accelerator system.

Everything here is SI: FLOP/s, bytes, bytes/s, seconds. Problem files speak in named units
(``*_gbps``, ``*_us``); :mod:`optmap.units` converts at the edge.

* :class:`Accelerator` — one device kind (a preset such as ``tpu-v3``, or your own).
* :class:`GroupSpec` — "``count`` devices of this accelerator", what a problem file lists.
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
from typing import Any, Iterable, Mapping, Sequence

import networkx as nx

from optmap.errors import OptmapError
from optmap.units import (
    bytes_per_s_to_gbps,
    bytes_per_s_to_gBps,
    bytes_to_gib,
    flops_to_tflops,
    gBps_to_bytes_per_s,
    gbps_to_bytes_per_s,
    gib_to_bytes,
    tflops_to_flops,
)

__all__ = [
    "Accelerator",
    "GroupSpec",
    "Group",
    "Link",
    "System",
    "assign_devices",
    "device_graph",
    "canonical_dtype",
]

# Spellings of the same number format; peak FLOP/s keys and lookups are normalised through this.
_DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "single": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8": "fp8",
    "tensorfloat32": "tf32",
}

DEFAULT_DTYPE_KEY = "default"

# Cached device-pair routes per system; cleared when it grows past this (1024 devices ≈ 5e5 pairs).
_ROUTE_CACHE_MAX = 1 << 18


def canonical_dtype(dtype: str) -> str:
    """The canonical spelling of a dtype name: ``"bfloat16" → "bf16"``, ``"float32" → "fp32"``."""
    if not isinstance(dtype, str) or not dtype.strip():
        raise OptmapError(f"dtype must be a non-empty string, got {dtype!r}")
    key = dtype.strip().lower()
    return _DTYPE_ALIASES.get(key, key)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_positive(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as a float, or an OptmapError naming the owner and the field."""
    bound = ">= 0" if allow_zero else "> 0"
    if not _is_number(value) or math.isnan(value) or math.isinf(value):
        raise OptmapError(f"{owner}: {name} must be a finite number {bound}, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise OptmapError(f"{owner}: {name} must be {bound}, got {value!r}")
    return float(value)


# ---------------------------------------------------------------------------------------------
# Accelerators
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accelerator:
    """One accelerator kind. All quantities SI.

    ``peak_flops`` is the peak rate per dtype in FLOP/s. Pass a mapping (``{"bf16": 180e12}``), an
    iterable of ``(dtype, value)`` pairs, or a single number (stored under ``"default"``); it is
    stored as a tuple of pairs so the accelerator stays hashable. A ``"default"`` entry answers
    any dtype without its own entry. ``network_bandwidth`` is the injection bandwidth of one
    accelerator into the network (B/s); ``memory_bandwidth`` is its local memory bandwidth (B/s).
    """

    name: str
    peak_flops: tuple[tuple[str, float], ...]
    memory_bytes: float
    memory_bandwidth: float
    network_bandwidth: float
    power_watts: float | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise OptmapError(f"accelerator name must be a non-empty string, got {self.name!r}")
        owner = f"accelerator '{self.name}'"
        set_ = object.__setattr__
        set_(self, "peak_flops", self._normalise_peak(owner, self.peak_flops))
        for name in ("memory_bytes", "memory_bandwidth", "network_bandwidth"):
            set_(self, name, _check_positive(owner, name, getattr(self, name)))
        if self.power_watts is not None:
            set_(self, "power_watts", _check_positive(owner, "power_watts", self.power_watts))
        if not isinstance(self.description, str):
            raise OptmapError(f"{owner}: description must be a string")

    @staticmethod
    def _normalise_peak(owner: str, peak: Any) -> tuple[tuple[str, float], ...]:
        if _is_number(peak):
            pairs: Iterable = [(DEFAULT_DTYPE_KEY, peak)]
        elif isinstance(peak, Mapping):
            pairs = peak.items()
        else:
            try:
                pairs = [tuple(p) for p in peak]
            except TypeError:
                raise OptmapError(
                    f"{owner}: peak_flops must be a number, a dtype → FLOP/s mapping or "
                    f"(dtype, FLOP/s) pairs, got {peak!r}"
                ) from None
        out: dict[str, float] = {}
        for pair in pairs:
            if len(pair) != 2:
                raise OptmapError(f"{owner}: peak_flops entry {pair!r} is not a (dtype, FLOP/s) pair")
            dtype, value = pair
            key = canonical_dtype(dtype)
            if key in out:
                raise OptmapError(f"{owner}: peak_flops lists dtype '{key}' twice")
            out[key] = _check_positive(owner, f"peak_flops['{key}']", value)
        if not out:
            raise OptmapError(f"{owner}: peak_flops must list at least one dtype")
        return tuple(out.items())

    @classmethod
    def from_datasheet(
        cls,
        name: str,
        *,
        peak_tflops: float | Mapping[str, float],
        memory_gib: float,
        memory_bandwidth_gBps: float,  # noqa: N803 - B = bytes
        network_gbps: float,
        power_watts: float | None = None,
        description: str = "",
    ) -> "Accelerator":
        """Build from datasheet units: TFLOP/s, GiB, GB/s (bytes) memory, Gb/s (bits) network."""
        owner = f"accelerator '{name}'"
        if _is_number(peak_tflops):
            peak: Any = tflops_to_flops(_check_positive(owner, "peak_tflops", peak_tflops))
        elif isinstance(peak_tflops, Mapping):
            peak = {
                k: tflops_to_flops(_check_positive(owner, f"peak_tflops['{k}']", v))
                for k, v in peak_tflops.items()
            }
        else:
            raise OptmapError(f"{owner}: peak_tflops must be a number or a dtype → TFLOP/s table")
        return cls(
            name=name,
            peak_flops=peak,
            memory_bytes=gib_to_bytes(_check_positive(owner, "memory_gib", memory_gib)),
            memory_bandwidth=gBps_to_bytes_per_s(
                _check_positive(owner, "memory_bandwidth_gBps", memory_bandwidth_gBps)
            ),
            network_bandwidth=gbps_to_bytes_per_s(_check_positive(owner, "network_gbps", network_gbps)),
            power_watts=power_watts,
            description=description,
        )

    @property
    def peak_flops_by_dtype(self) -> Mapping[str, float]:
        """Read-only ``dtype → FLOP/s`` view of :attr:`peak_flops`."""
        return MappingProxyType(dict(self.peak_flops))

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes with a peak rate (``"default"`` included if present)."""
        return tuple(k for k, _ in self.peak_flops)

    def flops_per_s(self, dtype: str = DEFAULT_DTYPE_KEY) -> float:
        """Peak FLOP/s for ``dtype`` (aliases such as ``bfloat16`` accepted), falling back to the
        ``"default"`` entry; an OptmapError listing the available dtypes otherwise."""
        key = canonical_dtype(dtype)
        table = dict(self.peak_flops)
        if key in table:
            return table[key]
        if DEFAULT_DTYPE_KEY in table:
            return table[DEFAULT_DTYPE_KEY]
        raise OptmapError(
            f"accelerator '{self.name}' has no peak FLOP/s for dtype '{key}'; available: "
            f"{', '.join(table)} (choose one of those, or give the accelerator a 'default' entry)"
        )


@dataclass(frozen=True)
class GroupSpec:
    """``count`` devices of one accelerator kind, as a problem file lists them (``name`` optional)."""

    accelerator: Accelerator
    count: int
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.accelerator, Accelerator):
            raise OptmapError(
                f"group: accelerator must be an Accelerator, got {type(self.accelerator).__name__}"
            )
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise OptmapError(
                f"group of '{self.accelerator.name}': count must be an integer >= 1, got {self.count!r}"
            )
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise OptmapError(f"group of '{self.accelerator.name}': name must be a non-empty string")


@dataclass(frozen=True)
class Group:
    """A named set of devices of one accelerator kind inside a :class:`System`."""

    name: str
    accelerator: Accelerator
    devices: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.devices)


@dataclass(frozen=True)
class Link:
    """One direct link: ``bandwidth`` in B/s, ``latency`` in s."""

    bandwidth: float
    latency: float


@dataclass(frozen=True)
class _Route:
    hops: int
    bandwidth: float  # bottleneck link bandwidth of the widest min-hop path (not endpoint-capped)
    latency: float  # smallest latency sum over min-hop paths


# ---------------------------------------------------------------------------------------------
# Helpers for topology builders
# ---------------------------------------------------------------------------------------------


def assign_devices(specs: Sequence[GroupSpec]) -> tuple[tuple[Accelerator, ...], tuple[Group, ...]]:
    """Number the devices of ``specs`` contiguously, group after group.

    Group names: the spec's ``name``, else the accelerator's name; an accelerator used by several
    unnamed groups gets ``#k`` suffixes (``tpu-v2#0``, ``tpu-v2#1``).
    """
    if isinstance(specs, GroupSpec):
        specs = [specs]
    specs = list(specs)
    if not specs:
        raise OptmapError("system: no accelerator groups given; list at least one [[system.groups]]")
    for s in specs:
        if not isinstance(s, GroupSpec):
            raise OptmapError(f"system: groups must be GroupSpec objects, got {type(s).__name__}")
    base = [s.name or s.accelerator.name for s in specs]
    seen: dict[str, int] = {}
    names = []
    for s, b in zip(specs, base):
        if s.name is None and base.count(b) > 1:
            k = seen.get(b, 0)
            seen[b] = k + 1
            names.append(f"{b}#{k}")
        else:
            names.append(b)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise OptmapError(f"system: two groups are named '{dup}'; give each group a unique name")
    devices: list[Accelerator] = []
    groups: list[Group] = []
    for s, n in zip(specs, names):
        start = len(devices)
        devices.extend([s.accelerator] * s.count)
        groups.append(Group(n, s.accelerator, tuple(range(start, start + s.count))))
    return tuple(devices), tuple(groups)


def device_graph(devices: Sequence[Accelerator]) -> nx.Graph:
    """A graph holding the device nodes ``0..len-1`` (attribute ``accelerator``) and no edges."""
    g = nx.Graph()
    g.add_nodes_from((i, {"accelerator": acc}) for i, acc in enumerate(devices))
    return g


# ---------------------------------------------------------------------------------------------
# System
# ---------------------------------------------------------------------------------------------


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

    def _route(self, a: int, b: int) -> _Route:
        a, b = self._check_device(a), self._check_device(b)
        key = (a, b) if a <= b else (b, a)
        route = self._routes.get(key)
        if route is None:
            route = self._compute_route(*key)
            if len(self._routes) >= _ROUTE_CACHE_MAX:
                self._routes.clear()
            self._routes[key] = route
        return route

    def _compute_route(self, a: Any, b: Any) -> _Route:
        """Widest / quickest min-hop route by a layered bidirectional BFS.

        Each side records BFS predecessors; when a newly found layer touches the other side, the
        meeting nodes are exactly the nodes at that depth on every shortest path, so the best
        bottleneck (max-min) and latency (min-sum) are combined over them.
        """
        if a == b:
            return _Route(0, math.inf, 0.0)
        adj = self.graph.adj
        direct = adj[a].get(b)
        if direct is not None:
            return _Route(1, float(direct["bandwidth"]), float(direct["latency"]))
        dist = ({a: 0}, {b: 0})
        preds: tuple[dict, dict] = ({a: ()}, {b: ()})
        order: tuple[list, list] = ([a], [b])
        front = [[a], [b]]
        meet: list = []
        while not meet:
            cost = [sum(len(adj[u]) for u in f) for f in front]
            side = 0 if cost[0] <= cost[1] else 1
            if not front[side]:
                raise OptmapError(f"system '{self.topology}': no path between devices {a} and {b}")
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
        return _Route(hops, float(bandwidth), float(latency))

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
