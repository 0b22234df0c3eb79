"""Built-in topology builders: ``build(groups, *, options) -> System``.

Unit convention for every problem-file option: bandwidths in **Gb/s** (gigabits per second,
G = 1e9, suffix ``_gbps``; 8 Gb/s = 1e9 B/s), latencies in **µs** (suffix ``_us``).

Shared rules:

* Devices are numbered group after group in the order the groups are listed (see
  :func:`optmap.system.assign_devices`); mixed groups on a ring / mesh / torus simply follow that
  order.
* A link's bandwidth defaults to the smaller of its two endpoints' ``network_bandwidth``; a
  ``*_bandwidth_gbps`` option overrides it. :meth:`System.path_bandwidth` still caps a flow at
  both endpoints' injection bandwidth, so a link faster than the devices does not help a single
  flow.
* ``latency_us = 1.0`` per link is an assumption (none of the seed papers gives α); set it to 0 to
  reproduce bandwidth-only models such as AccPar's.
* Non-blocking switches (``fully-connected`` and ``hierarchical`` above 64 devices, or
  ``switch = true``) are star hubs whose spokes carry the device's bandwidth and **half** the link
  latency, so device-to-device bandwidth and latency equal those of a direct link; only
  :meth:`System.hops` differs (2 instead of 1). This keeps 1024 devices at 1024 edges instead of
  ~5e5, and makes the switch invisible to cost models that use bandwidth and latency.
* Each builder checks its options and numbers the devices at once, but hands the system a
  :class:`~optmap.system.GraphRecipe` (a module-level edge builder and the graph's size): the
  graph is built only when routing asks for it, so a cost model that works on groups (AccPar)
  plans 2^30 devices without it.
"""


import math
from functools import partial
from typing import Any, Callable

from optmap.bounds import Dimension, Gbps, Microseconds
from optmap.errors import OptmapError
from optmap.system import Accelerator, GraphRecipe, GroupSpec, System, assign_devices, device_graph, square_shape
from optmap.units import gbps_to_bytes_per_s, us_to_s

# Above this many devices, fully-connected and hierarchical systems use switch nodes by default.
SWITCH_ABOVE = 64
# A fully-connected system without a switch above this many links is refused (memory and time).
MAX_DIRECT_LINKS = 500_000


def _bandwidth(topology: str, name: str, gbps: float | None) -> float | None:
    """Optional Gb/s option → B/s, rejecting zero, negative and non-numbers."""
    if gbps is None:
        return None
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not math.isfinite(gbps) or gbps <= 0:
        raise OptmapError(f"topology '{topology}': {name} must be a number > 0 (Gb/s), got {gbps!r}")
    return float(gbps_to_bytes_per_s(gbps))


def _latency(topology: str, name: str, us: float) -> float:
    if isinstance(us, bool) or not isinstance(us, (int, float)) or not math.isfinite(us) or us < 0:
        raise OptmapError(f"topology '{topology}': {name} must be a number >= 0 (µs), got {us!r}")
    return float(us_to_s(us))


def _switch(topology: str, switch: bool | None, n: int) -> bool:
    if switch is None:
        return n > SWITCH_ABOVE
    if not isinstance(switch, bool):
        raise OptmapError(f"topology '{topology}': switch must be true or false, got {switch!r}")
    return switch


def _pair_bw(devices: tuple[Accelerator, ...], override: float | None) -> Callable[[int, int], float]:
    if override is not None:
        return lambda a, b: override
    return lambda a, b: min(devices[a].network_bandwidth, devices[b].network_bandwidth)


def _system(devices, groups, graph, topology: str, params: dict[str, Any]) -> System:
    return System(devices=devices, groups=groups, graph=graph, topology=topology, params=params)


def fully_connected(
    groups: list[GroupSpec],
    *,
    bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
    switch: bool | None = None,
) -> System:
    """Every device reaches every other in one link (or through one non-blocking switch).

    ``bandwidth_gbps``: link bandwidth (default: the endpoints' smaller network bandwidth).
    ``switch``: model the all-to-all network as a star on ``"switch0"``; default: only above 64
    devices (same bandwidth and latency either way, see the module docstring).
    """
    name = "fully-connected"
    bw = _bandwidth(name, "bandwidth_gbps", bandwidth_gbps)
    lat = _latency(name, "latency_us", latency_us)
    devices, grps = assign_devices(groups)
    n = len(devices)
    use_switch = _switch(name, switch, n)
    links = n if use_switch else n * (n - 1) // 2
    if not use_switch and links > MAX_DIRECT_LINKS:
        raise OptmapError(
            f"topology '{name}': switch = false links every pair directly, {links:,} links for {n:,} devices, "
            f"more than the limit of {MAX_DIRECT_LINKS:,}; set switch = true (the same bandwidth and latency "
            f"between every pair, through one non-blocking switch)"
        )
    recipe = GraphRecipe(partial(_fully_connected_graph, devices, bw, lat, use_switch), nodes=n + use_switch, links=links)
    params = {"bandwidth_gbps": bandwidth_gbps, "latency_us": latency_us, "switch": use_switch}
    return _system(devices, grps, recipe, name, params)


def _fully_connected_graph(devices, bw: float | None, lat: float, use_switch: bool):
    devices = tuple(devices)  # the graph is per device anyway; indexing a tuple is quickest
    n = len(devices)
    g = device_graph(devices)
    if use_switch:
        g.add_edges_from(
            (i, "switch0", {"bandwidth": bw or devices[i].network_bandwidth, "latency": lat / 2})
            for i in range(n)
        )
    else:
        pbw = _pair_bw(devices, bw)
        g.add_edges_from(
            (i, j, {"bandwidth": pbw(i, j), "latency": lat}) for i in range(n) for j in range(i + 1, n)
        )
    return g


def _line(name: str, groups, bandwidth_gbps, latency_us, wrap: bool) -> System:
    bw = _bandwidth(name, "bandwidth_gbps", bandwidth_gbps)
    lat = _latency(name, "latency_us", latency_us)
    devices, grps = assign_devices(groups)
    n = len(devices)
    links = _dim_links(n, wrap)
    recipe = GraphRecipe(partial(_line_graph, devices, bw, lat, wrap), nodes=n, links=links)
    return _system(devices, grps, recipe, name, {"bandwidth_gbps": bandwidth_gbps, "latency_us": latency_us})


def _line_graph(devices, bw: float | None, lat: float, wrap: bool):
    devices = tuple(devices)  # the graph is per device anyway; indexing a tuple is quickest
    n = len(devices)
    pbw = _pair_bw(devices, bw)
    pairs = [(i, i + 1) for i in range(n - 1)]
    if wrap and n > 2:
        pairs.append((n - 1, 0))
    g = device_graph(devices)
    g.add_edges_from((a, b, {"bandwidth": pbw(a, b), "latency": lat}) for a, b in pairs)
    return g


def ring(
    groups: list[GroupSpec],
    *,
    bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
) -> System:
    """A bidirectional ring 0-1-…-(n-1)-0 (n links for n >= 3; two devices share one link)."""
    return _line("ring", groups, bandwidth_gbps, latency_us, wrap=True)


def chain(
    groups: list[GroupSpec],
    *,
    bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
) -> System:
    """A 1-D chain 0-1-…-(n-1) (n-1 links), e.g. FPDeep's FPGA chain."""
    return _line("chain", groups, bandwidth_gbps, latency_us, wrap=False)


def _grid(
    name: str,
    groups,
    shape: list[Dimension] | None,
    x_bandwidth_gbps: float | None,
    y_bandwidth_gbps: float | None,
    latency_us: float,
    wrap: bool,
) -> System:
    xbw = _bandwidth(name, "x_bandwidth_gbps", x_bandwidth_gbps)
    ybw = _bandwidth(name, "y_bandwidth_gbps", y_bandwidth_gbps)
    lat = _latency(name, "latency_us", latency_us)
    devices, grps = assign_devices(groups)
    n = len(devices)
    if shape is None:
        nx_, ny_ = square_shape(n)
    else:
        ok = (
            isinstance(shape, (list, tuple))
            and len(shape) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape)
        )
        if not ok:
            raise OptmapError(
                f"topology '{name}': shape must be two positive integers [X, Y], got {shape!r}"
            )
        nx_, ny_ = shape
        if nx_ * ny_ != n:
            sx, sy = square_shape(n)
            raise OptmapError(
                f"topology '{name}': shape [{nx_}, {ny_}] holds {nx_ * ny_} devices but the groups "
                f"give {n}; use a shape whose product is {n} (e.g. [{sx}, {sy}]) or omit it"
            )
    links = ny_ * _dim_links(nx_, wrap) + nx_ * _dim_links(ny_, wrap)
    recipe = GraphRecipe(partial(_grid_graph, devices, (nx_, ny_), xbw, ybw, lat, wrap), nodes=n, links=links)
    params = {
        "shape": (nx_, ny_),
        "x_bandwidth_gbps": x_bandwidth_gbps,
        "y_bandwidth_gbps": y_bandwidth_gbps,
        "latency_us": latency_us,
    }
    return _system(devices, grps, recipe, name, params)


def _dim_links(size: int, wrap: bool) -> int:
    """Number of links along one dimension of ``size`` devices (as :func:`_dim_pairs` lists them)."""
    return max(0, size - 1) + (wrap and size > 2)


def _dim_pairs(size: int, wrap: bool) -> list[tuple[int, int]]:
    pairs = [(k, k + 1) for k in range(size - 1)]
    if wrap and size > 2:  # a dimension of 2 already has its only link; 1 has none
        pairs.append((size - 1, 0))
    return pairs


def _grid_graph(devices, shape: tuple[int, int], xbw: float | None, ybw: float | None, lat: float, wrap: bool):
    devices = tuple(devices)  # the graph is per device anyway; indexing a tuple is quickest
    nx_, ny_ = shape
    xpbw, ypbw = _pair_bw(devices, xbw), _pair_bw(devices, ybw)
    edges = []
    for y in range(ny_):
        for x0, x1 in _dim_pairs(nx_, wrap):
            a, b = x0 + nx_ * y, x1 + nx_ * y
            edges.append((a, b, {"bandwidth": xpbw(a, b), "latency": lat, "dim": "x"}))
    for x in range(nx_):
        for y0, y1 in _dim_pairs(ny_, wrap):
            a, b = x + nx_ * y0, x + nx_ * y1
            edges.append((a, b, {"bandwidth": ypbw(a, b), "latency": lat, "dim": "y"}))
    g = device_graph(devices)
    g.add_edges_from(edges)
    return g


def mesh2d(
    groups: list[GroupSpec],
    *,
    shape: list[Dimension] | None = None,
    x_bandwidth_gbps: Gbps | None = None,
    y_bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
) -> System:
    """A 2-D mesh of shape [X, Y] (default: the most square factorisation, X >= Y).

    Device ``d`` sits at ``(x, y) = (d % X, d // X)``; X links carry ``x_bandwidth_gbps`` and Y
    links ``y_bandwidth_gbps`` (each defaulting to the endpoints' network bandwidth); every edge has
    a ``dim`` attribute ``"x"`` or ``"y"``. ``System.params["shape"]`` records ``(X, Y)``.
    """
    return _grid("mesh2d", groups, shape, x_bandwidth_gbps, y_bandwidth_gbps, latency_us, wrap=False)


def torus2d(
    groups: list[GroupSpec],
    *,
    shape: list[Dimension] | None = None,
    x_bandwidth_gbps: Gbps | None = None,
    y_bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
) -> System:
    """A 2-D torus: a mesh2d plus wrap-around links in every dimension longer than 2."""
    return _grid("torus2d", groups, shape, x_bandwidth_gbps, y_bandwidth_gbps, latency_us, wrap=True)


def hierarchical(
    groups: list[GroupSpec],
    *,
    bandwidth_gbps: Gbps | None = None,
    inter_bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
    inter_latency_us: Microseconds = 1.0,
    switch: bool | None = None,
) -> System:
    """Groups as the top level: fully connected inside each group, groups linked to each other.

    * Inside a group every pair is linked at ``bandwidth_gbps`` (default: the device's own network
      bandwidth) with ``latency_us``.
    * Between groups A and B the per-flow bandwidth is the smallest of: A's intra link, B's intra
      link, and the inter-group rate ``inter_bandwidth_gbps`` (default: the smaller of the two
      groups' network bandwidths, "the min of the two sides"). Its latency is
      ``latency_us + inter_latency_us`` (the extra 1 µs for crossing groups is an assumption).
      E.g. 128 tpu-v2 + 128 tpu-v3 give 1e9 B/s between the groups; MARS's F1 instance is two
      groups of 4 with ``inter_bandwidth_gbps = 2``.
    * ``switch`` (default: above 64 devices): each group gets a non-blocking switch
      ``"switch<i>"`` (spokes: intra bandwidth, half the intra latency) and the group switches are
      linked pairwise by trunks (inter bandwidth, ``inter_latency_us``). Bandwidth and latency
      between any two devices are the same as without switches; the trunk is a per-flow rate, not
      an aggregate capacity (contention is not modelled).
    """
    name = "hierarchical"
    bw = _bandwidth(name, "bandwidth_gbps", bandwidth_gbps)
    ibw = _bandwidth(name, "inter_bandwidth_gbps", inter_bandwidth_gbps)
    lat = _latency(name, "latency_us", latency_us)
    ilat = _latency(name, "inter_latency_us", inter_latency_us)
    devices, grps = assign_devices(groups)
    n = len(devices)
    use_switch = _switch(name, switch, n)
    links = n + len(grps) * (len(grps) - 1) // 2 if use_switch else n * (n - 1) // 2
    recipe = GraphRecipe(partial(_hierarchical_graph, devices, grps, bw, ibw, lat, ilat, use_switch),
                         nodes=n + len(grps) * use_switch, links=links)
    params = {
        "bandwidth_gbps": bandwidth_gbps,
        "inter_bandwidth_gbps": inter_bandwidth_gbps,
        "latency_us": latency_us,
        "inter_latency_us": inter_latency_us,
        "switch": use_switch,
    }
    return _system(devices, grps, recipe, name, params)


def _hierarchical_graph(devices, grps, bw: float | None, ibw: float | None, lat: float, ilat: float,
                        use_switch: bool):
    devices = tuple(devices)  # the graph is per device anyway; indexing a tuple is quickest
    def intra(acc: Accelerator) -> float:
        return bw if bw is not None else acc.network_bandwidth

    def trunk(a: Accelerator, b: Accelerator) -> float:
        return ibw if ibw is not None else min(a.network_bandwidth, b.network_bandwidth)

    g = device_graph(devices)
    if use_switch:
        for gi, grp in enumerate(grps):
            hub = f"switch{gi}"
            g.add_edges_from(
                (d, hub, {"bandwidth": intra(grp.accelerator), "latency": lat / 2}) for d in grp.devices
            )
            for gj in range(gi):
                other = grps[gj]
                g.add_edge(
                    f"switch{gj}",
                    hub,
                    bandwidth=trunk(other.accelerator, grp.accelerator),
                    latency=ilat,
                )
    else:
        for gi, grp in enumerate(grps):
            ai = grp.accelerator
            ds = grp.devices
            g.add_edges_from(
                (ds[i], ds[j], {"bandwidth": intra(ai), "latency": lat})
                for i in range(len(ds))
                for j in range(i + 1, len(ds))
            )
            for gj in range(gi):
                other = grps[gj]
                aj = other.accelerator
                cross = min(intra(ai), intra(aj), trunk(ai, aj))
                g.add_edges_from(
                    (u, v, {"bandwidth": cross, "latency": lat + ilat})
                    for u in other.devices
                    for v in ds
                )
    return g


TOPOLOGIES: dict[str, Callable[..., System]] = {
    "fully-connected": fully_connected,
    "ring": ring,
    "chain": chain,
    "mesh2d": mesh2d,
    "torus2d": torus2d,
    "hierarchical": hierarchical,
}
