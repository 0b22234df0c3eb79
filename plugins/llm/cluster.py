"""GPU clusters: nodes of 8 GPUs on NVSwitch (72 in a GB200 NVL72 rack), one adapter per GPU between.

Topologies ``dgx-a100``, ``dgx-h100``, ``dgx-b200`` and ``gb200-nvl72`` (an NVLink domain of
72 GPUs is its "node") build a :class:`optmap.system.System` of any GPU count
(``ceil(count / 8)`` nodes, or racks of 72; the last node may be partly filled). The graph has one hub per node
(``"nvswitch<i>"``, spokes at the per-GPU NVLink rate) and one InfiniBand fabric hub (``"ib"``,
spokes at the per-GPU adapter rate, a non-blocking fat tree as on Selene). Two GPUs of one node
meet through their NVSwitch and two GPUs of different nodes through the fabric, both in two hops,
so :meth:`System.path_bandwidth` gives NVLink inside a node and InfiniBand between nodes.

``System.params`` records the two levels (``gpus_per_node``, ``intra_bandwidth`` /
``intra_latency``, ``inter_bandwidth`` / ``inter_latency``, SI units), so
:func:`group_link` prices a collective group of thousands of GPUs without routing every pair;
for any other topology it asks the System (:meth:`System.subset_bandwidth`), which agrees on
small DGX systems (tested).

Constants (per direction, per GPU), each a named option in Gb/s or µs:

* DGX A100 (NVIDIA DGX A100 System Architecture white paper, 2020; DGX A100 datasheet): 8 × A100
  SXM4 80 GB, third-generation NVLink through six NVSwitches, 600 GB/s bidirectional per GPU =
  300 GB/s = 2,400 Gb/s each way; 8 × ConnectX-6 HDR InfiniBand, 200 Gb/s each (one per GPU, the
  compute fabric of Selene, Narayanan et al. SC'21 §5).
* DGX H100 (NVIDIA DGX H100 datasheet, 2022): 8 × H100 SXM5 80 GB, fourth-generation NVLink
  through four NVSwitches, 900 GB/s bidirectional per GPU = 450 GB/s = 3,600 Gb/s each way;
  8 × ConnectX-7 NDR InfiniBand, 400 Gb/s each.
* Host link (``host_bandwidth`` in ``System.params``, option ``host_gbps``; offloading,
  :mod:`.offload`): each GPU reaches host memory over PCIe on the DGX systems, Gen4 x16 on DGX
  A100 (DGX A100 datasheet: PCIe Gen4 switches; 32 GB/s = 256 Gb/s each way) and Gen5 x16 on DGX
  H100 and DGX B200 (datasheets: PCIe Gen5; 64 GB/s = 512 Gb/s each way), and over NVLink-C2C on
  GB200 (GB200 NVL72 datasheet: 900 GB/s bidirectional between each Grace CPU and its two Blackwell
  GPUs, taken as 450 GB/s = 3,600 Gb/s each way per GPU).
* Host memory (``host_memory`` in ``System.params``, option ``host_memory_gib``, per GPU; what an
  offloading plan keeps there must fit): the system memory over the node's GPUs, 1 TiB / 8 =
  128 GiB on DGX A100, 2 TiB / 8 = 256 GiB on DGX H100 and DGX B200 (datasheets), and each Grace
  CPU's 480 GB LPDDR5X over its two GPUs on GB200 (GB200 NVL72 datasheet) = 223.5 GiB.
* Latencies are not datasheet figures: 1 µs per NVSwitch step and 2 µs per InfiniBand step are
  assumptions (options ``nvlink_latency_us`` / ``ib_latency_us``) of the order of NCCL's
  per-step latency; they matter only for small messages, not for the multi-megabyte collectives
  of LLM training.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from optmap.bounds import Gbps, Microseconds, NonNegative, ints
from optmap.errors import OptmapError
from optmap.system import GroupSpec, System, assign_devices, device_graph
from optmap.system.graph import GraphRecipe
from optmap.units import gbps_to_bytes_per_s, gib_to_bytes, us_to_s

from . import placement

GPUS_PER_NODE = 8  # DGX A100, H100 and B200 (datasheets)
NVL72_GPUS = 72  # GPUs of one GB200 NVL72 NVLink domain (datasheet)
# GPUs a large job uses per NVL72 rack: Slurm segments of 16 compute trays of 4 GPUs, NVIDIA's
# recommendation for jobs of 128 GPUs and more such as MoE training (NVIDIA Technical Blog, "Unlock
# exascale performance on NVIDIA GB200 NVL72 with Slurm topology-aware job scheduling", 2025)
SEGMENT_GPUS = 64

@dataclass(frozen=True)
class Link:
    """Bandwidth (B/s, one direction, per GPU) and per-step latency (s) of one network level."""

    bandwidth: float
    latency: float


def _check_count(topology: str, groups: Sequence[GroupSpec]) -> None:
    if not groups:
        raise OptmapError(f"topology '{topology}': list the GPUs as one [[system.groups]] entry")


def _cluster_graph(devices, n: int, intra: Link, inter: Link, gpn: int = GPUS_PER_NODE):
    """The two-level graph: a switch per node (NVSwitch) and one InfiniBand fabric."""
    g = device_graph(devices)
    # spokes carry half the step latency each, so a GPU-to-GPU route has the level's latency
    g.add_edges_from((d, f"nvswitch{d // gpn}", {"bandwidth": intra.bandwidth, "latency": intra.latency / 2})
                     for d in range(n))
    if n > gpn:
        g.add_edges_from((d, "ib", {"bandwidth": inter.bandwidth, "latency": inter.latency / 2}) for d in range(n))
    return g


def _cluster(topology: str, groups: list[GroupSpec], nvlink_gbps: float, ib_gbps: float,
             nvlink_latency_us: float, ib_latency_us: float, gpn: int = GPUS_PER_NODE,
             host_gbps: float = 512.0, host_memory_gib: float = 256.0) -> System:
    _check_count(topology, groups)
    devices, grps = assign_devices(groups)
    n = len(devices)
    intra = Link(gbps_to_bytes_per_s(nvlink_gbps), us_to_s(nvlink_latency_us))
    inter = Link(gbps_to_bytes_per_s(ib_gbps), us_to_s(ib_latency_us))
    nodes = math.ceil(n / gpn)
    switches = nodes + (1 if nodes > 1 else 0)
    # built when routing first asks for it: the megatron-3d model prices the two levels from params
    graph = GraphRecipe(functools.partial(_cluster_graph, devices, n, intra, inter, gpn), n + switches,
                        n * (2 if nodes > 1 else 1))
    params = {"gpus_per_node": gpn, "nodes": nodes,
              "intra_bandwidth": intra.bandwidth, "intra_latency": intra.latency,
              "inter_bandwidth": inter.bandwidth, "inter_latency": inter.latency,
              "host_bandwidth": gbps_to_bytes_per_s(host_gbps), "host_memory": gib_to_bytes(host_memory_gib)}
    return System(devices=devices, groups=grps, graph=graph, topology=topology, params=params)


def dgx_a100(groups: list[GroupSpec], *, nvlink_gbps: Gbps = 2400.0, ib_gbps: Gbps = 200.0,
             nvlink_latency_us: Microseconds = 1.0, ib_latency_us: Microseconds = 2.0,
             host_memory_gib: NonNegative = 128.0, host_gbps: Gbps = 256.0) -> System:
    """DGX A100 nodes of 8 GPUs: NVLink 3 / NVSwitch 300 GB/s per GPU each way (2,400 Gb/s) inside a
    node, one 200 Gb/s HDR InfiniBand adapter per GPU between nodes (DGX A100 datasheet)."""
    return _cluster("dgx-a100", groups, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us,
                    host_gbps=host_gbps, host_memory_gib=host_memory_gib)


def dgx_h100(groups: list[GroupSpec], *, nvlink_gbps: Gbps = 3600.0, ib_gbps: Gbps = 400.0,
             nvlink_latency_us: Microseconds = 1.0, ib_latency_us: Microseconds = 2.0,
             host_memory_gib: NonNegative = 256.0, host_gbps: Gbps = 512.0) -> System:
    """DGX H100 nodes of 8 GPUs: NVLink 4 / NVSwitch 450 GB/s per GPU each way (3,600 Gb/s) inside a
    node, one 400 Gb/s NDR InfiniBand adapter per GPU between nodes (DGX H100 datasheet)."""
    return _cluster("dgx-h100", groups, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us,
                    host_gbps=host_gbps, host_memory_gib=host_memory_gib)


def dgx_b200(groups: list[GroupSpec], *, nvlink_gbps: Gbps = 7200.0, ib_gbps: Gbps = 400.0,
             nvlink_latency_us: Microseconds = 1.0, ib_latency_us: Microseconds = 2.0,
             host_memory_gib: NonNegative = 256.0, host_gbps: Gbps = 512.0) -> System:
    """DGX B200 nodes of 8 GPUs: NVLink 5 / NVSwitch 900 GB/s per GPU each way (7,200 Gb/s) inside a
    node, one 400 Gb/s ConnectX-7 (InfiniBand NDR or Ethernet) adapter per GPU between nodes (DGX
    B200 datasheet: 8 single-port ConnectX-7 VPI, 400 Gb/s)."""
    return _cluster("dgx-b200", groups, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us,
                    host_gbps=host_gbps, host_memory_gib=host_memory_gib)


def gb200_nvl72(groups: list[GroupSpec], *, nvlink_gbps: Gbps = 7200.0, ib_gbps: Gbps = 400.0,
                nvlink_latency_us: Microseconds = 1.0, ib_latency_us: Microseconds = 2.0,
                domain_gpus: ints(1, 4096) = SEGMENT_GPUS, host_gbps: Gbps = 3600.0,
                host_memory_gib: NonNegative = 223.5) -> System:
    """GB200 NVL72 racks: 72 GPUs in one NVLink 5 domain through the rack's NVLink switch trays,
    900 GB/s per GPU each way (7,200 Gb/s; datasheet: 130 TB/s for 72 GPUs), and one 400 Gb/s
    ConnectX-7 InfiniBand adapter per GPU between racks (DGX GB200: four ConnectX-7 per compute
    tray of four GPUs). ``domain_gpus``: the GPUs the job uses per NVLink domain, 64 by default
    (:data:`SEGMENT_GPUS`: Slurm segments of 16 trays, NVIDIA's recommendation for large jobs, so
    power-of-two groups do not straddle racks; 72 for whole racks, 36 for an NVL36 rack)."""
    if not isinstance(domain_gpus, int) or domain_gpus < 1:
        raise OptmapError(f"topology 'gb200-nvl72': domain_gpus must be a positive integer, got {domain_gpus!r}")
    return _cluster("gb200-nvl72", groups, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us, domain_gpus,
                    host_gbps, host_memory_gib)


def group_link(system: System, devices: np.ndarray | Sequence[int]) -> Link:
    """Ring bandwidth and per-step latency of a collective over ``devices`` (in ring order).

    On a two-level cluster (``gpus_per_node`` in ``system.params``): the NVLink level when every
    device is in one node, else the InfiniBand level (each GPU's own adapter is the ring's
    bottleneck). Any other System: :meth:`System.subset_bandwidth` / ``subset_latency``.
    """
    devs = np.asarray(devices, dtype=np.int64)
    if len(devs) <= 1:
        return Link(math.inf, 0.0)
    p = system.params
    if "gpus_per_node" in p:
        nodes = devs // int(p["gpus_per_node"])
        if nodes.min() == nodes.max():
            return Link(float(p["intra_bandwidth"]), float(p["intra_latency"]))
        return Link(float(p["inter_bandwidth"]), float(p["inter_latency"]))
    ring = [int(d) for d in devs]
    return Link(system.subset_bandwidth(ring), system.subset_latency(ring))


def _distinct(*sizes: np.ndarray) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The distinct tuples of equally shaped non-negative int arrays (one column each) and, per
    element, the index of its tuple: one int key per tuple, each column in a radix above its own
    largest size (a 1-D sort, many times faster than ``np.unique(..., axis=0)`` on a search's
    millions of plans), or ``np.unique(..., axis=0)`` where the key would not fit 63 bits."""
    radices = [int(x.max(initial=0)) + 1 for x in sizes]
    if math.prod(radices) >= 2**63:
        uniq, inverse = np.unique(np.stack([x.ravel() for x in sizes], axis=1), axis=0, return_inverse=True)
        return tuple(uniq.T), inverse.ravel()
    key = np.zeros(sizes[0].size, dtype=np.int64)
    for x, radix in zip(sizes, radices):
        key = key * radix + x.ravel()
    uniq, inverse = np.unique(key, return_inverse=True)
    columns = []
    for radix in reversed(radices):  # the last column is the key's lowest digit
        uniq, digit = np.divmod(uniq, radix)
        columns.append(digit)
    return tuple(reversed(columns)), inverse.ravel()


def plan_links(system: System, t, d, p, cp=1) -> dict[str, np.ndarray]:
    """Links of Megatron's groups for arrays of (tensor, data, pipeline, context) sizes that broadcast.

    Rank order is Megatron-Core's default ``tp-cp-ep-dp-pp``: tensor-parallel ranks consecutive,
    context-parallel ranks ``t`` apart, data-parallel ranks ``t·cp`` apart, pipeline stages
    ``t·cp·d`` apart (``cp = 1``: Megatron-LM's tensor-data-pipeline order). Gradients are reduced
    (and the distributed optimizer or FSDP shards) over the ``d·cp`` ranks that hold the same
    weights, ``t`` apart: the ``dp`` links are that group's. Every group of the plan is priced over
    the links it uses and
    the slowest sets the pace (a synchronous step waits for it; :mod:`.placement`): a group in one
    node runs at the NVLink rate; a group that spans nodes runs ``k`` rings at once, one through
    each InfiniBand adapter of its node with the fewest members ``k`` (NCCL's channels), so it
    moves ``k`` times the adapter rate (at most the NVLink rate); a stage hop and a
    context-parallel ring step are one GPU-to-GPU flow each. Returns ``{tp,dp,pp,cp}_{bw,lat}``
    (B/s, s; a group of one: infinite bandwidth, no latency) and ``pp_crosses_nodes``. Two-level
    clusters are priced in closed form; any other System asks :func:`group_link` for every group
    of each distinct (t, d, p, cp).
    """
    t, d, p, cp = np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in (t, d, p, cp)))
    (ut, ud, up, uc), inverse = _distinct(t, d, p, cp)  # place each (t, d, p, cp) once
    if "gpus_per_node" in system.params:
        q = system.params
        gpn = int(q["gpus_per_node"])
        intra = (float(q["intra_bandwidth"]), float(q["intra_latency"]))
        inter = (float(q["inter_bandwidth"]), float(q["inter_latency"]))
        tp_span, tp_k = placement.tensor_groups(ut, ud * uc, up, gpn)
        dp_span, dp_k = placement.data_groups(ut, ud * uc, up, gpn)  # the d·cp ranks t apart
        cp_span, _ = placement.data_groups(ut, uc, ud * up, gpn)  # cp ranks t apart in each block of t·cp
        hop_span = placement.stage_hops_cross(ut, ud * uc, up, gpn)
        out = {}
        for name, size, spans, k in (("tp", ut, tp_span, tp_k), ("dp", ud * uc, dp_span, dp_k),
                                     ("pp", up, hop_span, np.ones_like(up)), ("cp", uc, cp_span, np.ones_like(uc))):
            alone = size <= 1
            across = np.minimum(intra[0], k * inter[0])
            bw = np.where(alone, np.inf, np.where(spans, across, intra[0]))
            lat = np.where(alone, 0.0, np.where(spans, inter[1], intra[1]))
            out[f"{name}_bw"], out[f"{name}_lat"] = bw[inverse].reshape(t.shape), lat[inverse].reshape(t.shape)
        out["pp_crosses_nodes"] = hop_span[inverse].reshape(t.shape)
        return out
    last = system.count - 1
    rows = []
    for tt, dd, pp, cc in zip(ut.tolist(), ud.tolist(), up.tolist(), uc.tolist()):
        ranks = np.minimum(np.arange(tt * cc * dd * pp), last).reshape(pp, dd, cc, tt)  # tp-cp-dp-pp
        tp = slowest(system, ranks.reshape(-1, tt))
        dp = slowest(system, ranks.reshape(pp, dd * cc, tt).transpose(0, 2, 1).reshape(-1, dd * cc))
        ring = slowest(system, ranks.transpose(0, 1, 3, 2).reshape(-1, cc)) if cc > 1 else Link(np.inf, 0.0)
        hop = slowest(system, np.stack([ranks[:-1].ravel(), ranks[1:].ravel()], axis=1)) if pp > 1 \
            else Link(np.inf, 0.0)
        rows.append((tp.bandwidth, tp.latency, dp.bandwidth, dp.latency, hop.bandwidth, hop.latency,
                     pp > 1 and hop.bandwidth < tp.bandwidth, ring.bandwidth, ring.latency))
    table = np.array(rows, dtype=float)[inverse]
    names = ("tp_bw", "tp_lat", "dp_bw", "dp_lat", "pp_bw", "pp_lat", "pp_crosses_nodes", "cp_bw", "cp_lat")
    return {name: (table[:, i] > 0 if name == "pp_crosses_nodes" else table[:, i]).reshape(t.shape)
            for i, name in enumerate(names)}


def slowest(system: System, groups: np.ndarray) -> Link:
    """The slowest :func:`group_link` of the groups (rows, in ring order): least bandwidth, then most latency."""
    links = [group_link(system, row) for row in np.unique(groups, axis=0)]
    return min(links, key=lambda link: (link.bandwidth, -link.latency))


def expert_links(system: System, t, d, p, ep, etp) -> dict[str, np.ndarray]:
    """Links of Megatron-Core's expert groups for arrays of (tensor, data, pipeline, expert, expert
    tensor) sizes.

    Expert ranks follow Megatron-Core's expert rank generator (order ``tp-cp-ep-dp-pp`` with ``tp =
    etp``, context parallel 1, inside each stage's ``t·d`` ranks; :mod:`.moe`): an ETP group is
    ``etp`` consecutive ranks, an EP group ``ep`` ranks ``etp`` apart, an expert-data-parallel group
    ``t·d/(ep·etp)`` ranks ``etp·ep`` apart. Returns ``ep_intra_bw`` / ``ep_inter_bw`` (the NVLink
    and per-GPU adapter rates an all-to-all uses), ``ep_lat``, ``ep_members`` (the fewest members
    of an EP group in one node, ``ep`` when every group is inside a node) and ``{etp,edp}_{bw,lat}``
    priced as :func:`plan_links` prices rings. Any other System: :func:`group_link` per group, the
    all-to-all at the slowest EP group's rate.
    """
    t, d, p, ep, etp = np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in (t, d, p, ep, etp)))
    (ut, ud, up, uep, uetp), inverse = _distinct(t, d, p, ep, etp)  # place each (t, d, p, ep, etp) once
    edp = np.maximum(ut * ud // (uep * uetp), 1)
    cols: dict[str, np.ndarray] = {}
    if "gpus_per_node" in system.params:
        q = system.params
        gpn = int(q["gpus_per_node"])
        intra, inter = float(q["intra_bandwidth"]), float(q["inter_bandwidth"])
        lat = (float(q["intra_latency"]), float(q["inter_latency"]))
        blocks = np.maximum(ut * ud * up // (uep * uetp), 1)
        ep_span, ep_k = placement.data_groups(uetp, uep, blocks, gpn)
        cols["ep_intra_bw"] = np.where(uep > 1, intra, np.inf)
        cols["ep_inter_bw"] = np.where(ep_span, inter, np.inf)
        cols["ep_lat"] = np.where(uep > 1, np.where(ep_span, lat[1], lat[0]), 0.0)
        cols["ep_members"] = np.where(ep_span, ep_k, uep).astype(float)
        groups = (("etp", uetp, placement.tensor_groups(uetp, ut * ud * up // uetp, np.ones_like(ut), gpn)),
                  ("edp", edp, placement.data_groups(uep * uetp, edp, up, gpn)))
        for name, size, (spans, k) in groups:
            cols[f"{name}_bw"] = np.where(size <= 1, np.inf, np.where(spans, np.minimum(intra, k * inter), intra))
            cols[f"{name}_lat"] = np.where(size <= 1, 0.0, np.where(spans, lat[1], lat[0]))
    else:
        last = system.count - 1
        rows = []
        for tt, dd, pp, ee, et in zip(ut.tolist(), ud.tolist(), up.tolist(), uep.tolist(), uetp.tolist()):
            ee_dp = max(tt * dd // (ee * et), 1)
            ranks = np.minimum(np.arange(pp * ee_dp * ee * et), last).reshape(pp, ee_dp, ee, et)
            a2a = slowest(system, ranks.transpose(0, 1, 3, 2).reshape(-1, ee)) if ee > 1 else Link(np.inf, 0.0)
            tensor = slowest(system, ranks.reshape(-1, et)) if et > 1 else Link(np.inf, 0.0)
            data = slowest(system, ranks.transpose(0, 2, 3, 1).reshape(-1, ee_dp)) if ee_dp > 1 else Link(np.inf, 0.0)
            rows.append((a2a.bandwidth, a2a.bandwidth, a2a.latency, ee, tensor.bandwidth, tensor.latency,
                         data.bandwidth, data.latency))
        table = np.array(rows, dtype=float).T
        names = ("ep_intra_bw", "ep_inter_bw", "ep_lat", "ep_members", "etp_bw", "etp_lat", "edp_bw", "edp_lat")
        cols = dict(zip(names, table))
    return {name: col[inverse].reshape(t.shape) for name, col in cols.items()}
