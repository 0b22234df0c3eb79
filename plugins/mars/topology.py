"""MARS systems: the AWS F1.16xlarge instance, the H2H cluster, and AccSet candidates (Sec. III, V).

Both builders make an optmap :class:`~optmap.system.System` whose device nodes are the FPGAs and
whose string node ``"host"`` is the host machine; every device has a link to the host. Problem
files give bandwidths in Gb/s (``*_gbps``) and the per-message latency in µs (``latency_us``).

* ``f1-16xlarge`` (Sec. II-A, Fig. 1, Sec. VI-A): 8 FPGAs in peer-to-peer groups of 4; devices
  of one group talk directly at 8 Gb/s, every device reaches the host at 2 Gb/s, and traffic
  between groups goes through the host (device → host → device, bottleneck 2 Gb/s).
* ``h2h-cluster`` (Sec. VI-C): the cloud-scale multi-FPGA system of H2H's comparison, every pair
  of devices linked at one ``bandwidth_gbps`` (H2H's levels 1, 1.2, 2, 4, 10 Gb/s; another only
  with ``bandwidth_levels = "any"``) and the host
  at ``host_bandwidth_gbps`` (default: the same). Its devices are normally fixed designs
  (``[[system.groups]] accelerator = "superlip"`` ...), the heterogeneous system H2H maps onto.

AccSet candidates (Sec. V): "MARS iteratively removes the edge with the lowest bandwidth in
G(Acc, BW)"; the connected sub-graphs met on the way are the candidates. G's edge (i, j) carries
the device-pair bandwidth :meth:`System.path_bandwidth`. Ties (note §2.5, §6.15): when removing
one bandwidth level breaks a component into more than two pieces (the four 8 Gb/s-linked FPGAs
of an F1 group fall apart at once), the pieces are re-joined by recursive balanced bisection in
device order, so F1 yields {0..7}, {0..3}, {4..7}, {0,1}, {2,3}, {4,5}, {6,7} and the singletons.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import networkx as nx

from optmap.bounds import MAX_DIMENSION, Gbps, Microseconds, ints
from optmap.errors import OptmapError
from optmap.system import GroupSpec, System, assign_devices, device_graph
from optmap.units import gbps_to_bytes_per_s, us_to_s

HOST = "host"


def _link(bandwidth_gbps: float, latency_us: float) -> dict:
    return {"bandwidth": float(gbps_to_bytes_per_s(bandwidth_gbps)), "latency": float(us_to_s(latency_us))}


def f1_16xlarge(
    groups: list[GroupSpec],
    *,
    group_size: ints(1, MAX_DIMENSION) = 4,
    intra_bandwidth_gbps: Gbps = 8.0,
    host_bandwidth_gbps: Gbps = 2.0,
    latency_us: Microseconds = 1.0,
) -> System:
    """AWS F1.16xlarge (MARS Fig. 1): peer-to-peer groups of ``group_size`` FPGAs, the host between groups.

    ``intra_bandwidth_gbps`` between FPGAs of a group (Sec. VI-A: 8 Gb/s);
    ``host_bandwidth_gbps`` from each FPGA to the host, also the path between groups (2 Gb/s);
    ``latency_us`` per link (the paper gives none; 1 µs, an assumption).
    """
    devices, grps = assign_devices(groups)
    graph = device_graph(devices)
    graph.add_node(HOST)
    n = len(devices)
    for start in range(0, n, group_size):
        members = range(start, min(start + group_size, n))
        graph.add_edges_from((a, b, _link(intra_bandwidth_gbps, latency_us))
                             for a, b in itertools.combinations(members, 2))
    graph.add_edges_from((d, HOST, _link(host_bandwidth_gbps, latency_us)) for d in range(n))
    params = {"group_size": group_size, "intra_bandwidth_gbps": intra_bandwidth_gbps,
              "host_bandwidth_gbps": host_bandwidth_gbps, "latency_us": latency_us}
    return System(devices=devices, groups=grps, graph=graph, topology="f1-16xlarge", params=params)


H2H_LEVELS = (1.0, 1.2, 2.0, 4.0, 10.0)  # Gb/s: the bandwidths of H2H's comparison (MARS Sec. VI-C)


def h2h_cluster(
    groups: list[GroupSpec],
    *,
    bandwidth_gbps: Gbps = 1.0,
    host_bandwidth_gbps: Gbps | None = None,
    latency_us: Microseconds = 1.0,
    bandwidth_levels: Literal["h2h", "any"] = "h2h",
) -> System:
    """H2H's cloud-scale multi-FPGA system (MARS Sec. VI-C): every device pair linked at ``bandwidth_gbps``.

    ``bandwidth_gbps``: one of H2H's five levels (1, 1.2, 2, 4, 10 Gb/s); another value is
    refused unless ``bandwidth_levels = "any"`` (a study beyond the paper's systems);
    ``host_bandwidth_gbps``: device-to-host links (default: ``bandwidth_gbps``);
    ``latency_us`` per link (assumption, 1 µs).
    """
    if bandwidth_levels == "h2h" and not any(math.isclose(bandwidth_gbps, level) for level in H2H_LEVELS):
        raise OptmapError(f"h2h-cluster: bandwidth_gbps = {bandwidth_gbps:g} is not one of H2H's levels "
                          f"({', '.join(f'{level:g}' for level in H2H_LEVELS)} Gb/s, MARS Sec. VI-C); set "
                          f"system.bandwidth_levels = \"any\" to model another bandwidth")
    devices, grps = assign_devices(groups)
    graph = device_graph(devices)
    graph.add_node(HOST)
    host = bandwidth_gbps if host_bandwidth_gbps is None else host_bandwidth_gbps
    graph.add_edges_from((a, b, _link(bandwidth_gbps, latency_us))
                         for a, b in itertools.combinations(range(len(devices)), 2))
    graph.add_edges_from((d, HOST, _link(host, latency_us)) for d in range(len(devices)))
    params = {"bandwidth_gbps": bandwidth_gbps, "host_bandwidth_gbps": host, "latency_us": latency_us}
    return System(devices=devices, groups=grps, graph=graph, topology="h2h-cluster", params=params)


TOPOLOGIES = {"f1-16xlarge": f1_16xlarge, "h2h-cluster": h2h_cluster}


# --- AccSet candidates ------------------------------------------------------------------------


def bandwidth_graph(system: System) -> nx.Graph:
    """G(Acc, BW) of Sec. III: devices, and an edge per directly or indirectly linked pair.

    A device with no link at all is refused (MARS cannot reach it): one clear line.
    """
    n = system.count
    for d in range(n):
        if n > 1 and system.graph.degree(d) == 0:
            raise OptmapError(f"system '{system.topology}': device {d} is isolated (no link); "
                              f"MARS needs every accelerator connected to the others or to the host")
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for a, b in itertools.combinations(range(n), 2):
        g.add_edge(a, b, bandwidth=system.path_bandwidth(a, b))
    return g


def _split(g: nx.Graph, devices: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Remove the lowest-bandwidth edges among ``devices`` until they fall apart (Sec. V)."""
    sub = g.subgraph(devices).copy()
    levels = sorted({bw for _, _, bw in sub.edges(data="bandwidth")})
    for level in levels:
        sub.remove_edges_from([(a, b) for a, b, bw in sub.edges(data="bandwidth") if bw <= level])
        parts = [tuple(sorted(c)) for c in nx.connected_components(sub)]
        if len(parts) > 1:
            return sorted(parts)
    return [(d,) for d in devices]  # every pair at one bandwidth and nothing left to remove


def accset_candidates(system: System, span_slowest: bool = True) -> tuple[tuple[int, ...], ...]:
    """The AccSet candidates: the components met while removing edges, ties bisected (module docstring).

    Ordered root first, then breadth-first (sizes descending), devices ascending inside a set.
    ``span_slowest = False`` keeps only the components the removals *produce* (Sec. V: "This will
    produce several connected sub-graphs, which are regarded as candidates"): where the system
    has more than one bandwidth level, a set still holding an edge of the lowest one (on F1 the
    whole system, across the host) is dropped.
    """
    g = bandwidth_graph(system)
    found: list[tuple[int, ...]] = []

    def node(devices: tuple[int, ...], pieces: list[tuple[int, ...]] | None = None) -> None:
        found.append(devices)
        if len(devices) == 1:
            return
        if pieces is None or len(pieces) == 1:
            pieces = _split(g, devices)
        if len(pieces) == 2:
            node(pieces[0])
            node(pieces[1])
            return
        half = math.ceil(len(pieces) / 2)  # recursive balanced bisection of tied pieces
        for part in (pieces[:half], pieces[half:]):
            node(tuple(sorted(d for p in part for d in p)), part)

    node(tuple(range(system.count)))
    if not span_slowest:
        levels = {bw for _, _, bw in g.edges(data="bandwidth")}
        if len(levels) > 1:
            slowest = min(levels)
            found = [c for c in found if len(c) == 1 or min(g.subgraph(c).edges(data="bandwidth"),
                                                              key=lambda e: e[2])[2] > slowest]
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


def search_candidates(system: System, min_size: int, span_slowest: bool) -> tuple[tuple[int, ...], ...]:
    """The candidates the ``mars`` cost model searches: :func:`accset_candidates` with
    ``span_slowest``, less those smaller than ``min_size`` (one line if devices stay uncovered)."""
    found = [c for c in accset_candidates(system, span_slowest) if len(c) >= min_size]
    minimal = [c for c in found if not any(set(o) < set(c) for o in found)]
    if sorted(d for c in minimal for d in c) != list(range(system.count)):
        raise OptmapError(f"min_set_size = {min_size} leaves devices no AccSet candidate can cover; lower it")
    return tuple(found)


def set_label(devices: tuple[int, ...]) -> str:
    """``(0, 1, 2, 3)`` → ``"0-3"``; non-contiguous sets list their devices (``"0,2,5"``)."""
    if len(devices) > 1 and list(devices) == list(range(devices[0], devices[-1] + 1)):
        return f"{devices[0]}-{devices[-1]}"
    return ",".join(map(str, devices))
