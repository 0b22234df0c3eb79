"""Accelerators, systems, routing and the built-in hardware plugin (fast: well under a second)."""

import math
import pickle
import time

import networkx as nx
import pytest

from optmap.errors import OptmapError
from optmap.plugins import hardware
from optmap.plugins.hardware.accelerators import A100, PRESETS, TITAN_RTX, TPU_V2, TPU_V3, V100
from optmap.plugins.hardware.topologies import (
    chain,
    fully_connected,
    hierarchical,
    mesh2d,
    ring,
    square_shape,
    torus2d,
)
from optmap.system import Accelerator, Group, GroupSpec, Link, System, assign_devices, device_graph
from optmap.units import gbps_to_bytes_per_s, gBps_to_bytes_per_s, gib_to_bytes, tflops_to_flops, us_to_s


def acc(name="x", **kw):
    base = dict(
        name=name,
        peak_flops={"fp32": 1e12},
        memory_bytes=1e9,
        memory_bandwidth=1e11,
        network_bandwidth=1e9,
    )
    base.update(kw)
    return Accelerator(**base)


# -- units ----------------------------------------------------------------------------------------


def test_units():
    assert gbps_to_bytes_per_s(8) == 1e9  # 8e9 bit/s / 8 bit/B
    assert gBps_to_bytes_per_s(2.5) == 2.5e9
    assert tflops_to_flops(180) == 180e12
    assert gib_to_bytes(1) == 1024**3
    assert us_to_s(1.0) == 1e-6


# -- accelerators ---------------------------------------------------------------------------------


def test_accelerator_validation_names_the_field():
    with pytest.raises(OptmapError, match=r"accelerator 'x': network_bandwidth must be > 0, got 0"):
        acc(network_bandwidth=0)
    with pytest.raises(OptmapError, match="memory_bytes"):
        acc(memory_bytes=-1)
    with pytest.raises(OptmapError, match="power_watts"):
        acc(power_watts=0)
    with pytest.raises(OptmapError, match=r"peak_flops\['fp32'\]"):
        acc(peak_flops={"fp32": 0})
    with pytest.raises(OptmapError, match="at least one dtype"):
        acc(peak_flops={})
    with pytest.raises(OptmapError, match="twice"):
        acc(peak_flops={"bf16": 1.0, "bfloat16": 2.0})
    with pytest.raises(OptmapError, match="name"):
        acc(name="")


def test_flops_per_s_aliases_default_and_error():
    a = acc(peak_flops={"bfloat16": 2e12, "fp32": 1e12})
    assert a.peak_flops == (("bf16", 2e12), ("fp32", 1e12))
    assert a.flops_per_s("bf16") == a.flops_per_s("BFloat16") == 2e12
    assert a.peak_flops_by_dtype["fp32"] == 1e12
    with pytest.raises(OptmapError, match=r"no peak FLOP/s for dtype 'fp16'; available: bf16, fp32"):
        a.flops_per_s("float16")
    b = acc(peak_flops={"fp16": 4e12, "default": 1e12})
    assert b.flops_per_s("fp16") == 4e12 and b.flops_per_s("int8") == 1e12
    assert acc(peak_flops=3e12).flops_per_s("anything") == 3e12
    hash(a)  # frozen and hashable
    assert a == acc(peak_flops=[("bf16", 2e12), ("fp32", 1e12)])


def test_from_datasheet_units():
    a = Accelerator.from_datasheet(
        "fpga", peak_tflops=1.5, memory_gib=1, memory_bandwidth_gBps=19.2, network_gbps=8
    )
    assert a.flops_per_s("fp16") == 1.5e12  # single number → "default"
    assert a.memory_bytes == 2**30 and a.memory_bandwidth == 19.2e9 and a.network_bandwidth == 1e9
    with pytest.raises(OptmapError, match="network_gbps"):
        Accelerator.from_datasheet("f", peak_tflops=1, memory_gib=1, memory_bandwidth_gBps=1, network_gbps=0)


def test_presets():
    # AccPar Table 7 + Sec. 6.1: 8 Gb/s = 1e9 B/s, 16 Gb/s = 2e9 B/s
    assert TPU_V2.flops_per_s("bf16") == 180e12 and TPU_V2.network_bandwidth == 1e9
    assert TPU_V3.flops_per_s("bf16") == 420e12 and TPU_V3.network_bandwidth == 2e9
    assert TPU_V2.memory_bandwidth == 2400e9 and TPU_V3.memory_bandwidth == 4800e9
    assert V100.flops_per_s("fp16") == 125e12 and V100.flops_per_s("fp32") == 15.7e12
    assert A100.flops_per_s("bf16") == 312e12 and A100.memory_bandwidth == 2039e9
    assert TITAN_RTX.network_bandwidth == 1.25e9  # 10 Gb/s
    # b200 and gb200 added by issue 25 (Blackwell systems)
    assert set(PRESETS) == {"tpu-v2", "tpu-v3", "v100", "a100", "titan-rtx", "h100", "b200", "gb200"}


def test_groupspec_validation():
    with pytest.raises(OptmapError, match="count must be an integer >= 1"):
        GroupSpec(TPU_V2, 0)
    with pytest.raises(OptmapError, match="count"):
        GroupSpec(TPU_V2, True)
    with pytest.raises(OptmapError, match="Accelerator"):
        GroupSpec("tpu-v2", 4)


def test_assign_devices_names():
    devices, groups = assign_devices([GroupSpec(TPU_V2, 2), GroupSpec(TPU_V3, 1), GroupSpec(TPU_V2, 1)])
    assert [g.name for g in groups] == ["tpu-v2#0", "tpu-v3", "tpu-v2#1"]
    assert [g.devices for g in groups] == [(0, 1), (2,), (3,)]
    with pytest.raises(OptmapError, match="no accelerator groups"):
        assign_devices([])
    with pytest.raises(OptmapError, match="named 'a'"):
        assign_devices([GroupSpec(TPU_V2, 1, "a"), GroupSpec(TPU_V3, 1, "a")])


# -- plugin registration ----------------------------------------------------------------------------


def test_plugin_registers_presets_and_topologies():
    accs, topos = {}, {}
    hardware.optmap_register_accelerators(register=lambda n, f: accs.__setitem__(n, f))
    hardware.optmap_register_topologies(register=lambda n, f: topos.__setitem__(n, f))
    assert accs["tpu-v3"] is TPU_V3
    assert set(topos) == {"fully-connected", "ring", "chain", "mesh2d", "torus2d", "hierarchical"}
    assert topos["torus2d"] is torus2d


# -- topologies: structure --------------------------------------------------------------------------


def test_ring_chain_edge_counts():
    assert ring([GroupSpec(TPU_V2, 8)]).graph.number_of_edges() == 8
    assert ring([GroupSpec(TPU_V2, 2)]).graph.number_of_edges() == 1
    assert ring([GroupSpec(TPU_V2, 1)]).graph.number_of_edges() == 0
    c = chain([GroupSpec(TPU_V2, 8)])
    assert c.graph.number_of_edges() == 7 and c.hops(0, 7) == 7
    r = ring([GroupSpec(TPU_V2, 8)], latency_us=2.0)
    assert r.hops(0, 7) == 1 and r.hops(0, 4) == 4
    assert r.path_latency(0, 4) == pytest.approx(8e-6)  # 4 hops × 2 µs


def test_mesh_torus_edge_counts_and_shape():
    t = torus2d([GroupSpec(TPU_V3, 16)])
    m = mesh2d([GroupSpec(TPU_V3, 16)])
    assert t.graph.number_of_edges() == 32  # 2 links per node on a 4×4 torus
    assert m.graph.number_of_edges() == 24  # 3·4 X links + 4·3 Y links
    assert t.params["shape"] == (4, 4)
    assert square_shape(8) == (4, 2) and square_shape(7) == (7, 1) and square_shape(12) == (4, 3)
    assert torus2d([GroupSpec(TPU_V3, 8)]).params["shape"] == (4, 2)
    # 4×2 torus: X wraps (4 per row × 2 rows = 8), Y of size 2 has only its single link (4)
    assert torus2d([GroupSpec(TPU_V3, 8)]).graph.number_of_edges() == 12
    assert torus2d([GroupSpec(TPU_V3, 16)]).hops(0, 3) == 1  # wrap-around along X
    assert mesh2d([GroupSpec(TPU_V3, 16)]).hops(0, 15) == 6


def test_torus_separate_x_y_bandwidth():
    t = torus2d([GroupSpec(A100, 16)], shape=[4, 4], x_bandwidth_gbps=800, y_bandwidth_gbps=400)
    for u, v, d in t.graph.edges(data=True):
        assert d["bandwidth"] == (100e9 if d["dim"] == "x" else 50e9)  # 800 Gb/s, 400 Gb/s
    assert t.link(0, 1) == Link(100e9, 1e-6)  # (0,0)-(1,0) is an X link
    assert t.link(0, 4).bandwidth == 50e9  # (0,0)-(0,1) is a Y link
    assert t.path_bandwidth(0, 1) == 100e9 and t.path_bandwidth(0, 4) == 50e9


def test_grid_errors():
    with pytest.raises(OptmapError, match=r"shape \[4, 3\] holds 12 devices but the groups give 16"):
        torus2d([GroupSpec(TPU_V3, 16)], shape=[4, 3])
    with pytest.raises(OptmapError, match="two positive integers"):
        mesh2d([GroupSpec(TPU_V3, 16)], shape=[16])
    with pytest.raises(OptmapError, match="x_bandwidth_gbps must be a number > 0"):
        torus2d([GroupSpec(TPU_V3, 4)], x_bandwidth_gbps=0)
    with pytest.raises(OptmapError, match="latency_us"):
        ring([GroupSpec(TPU_V3, 4)], latency_us=-1)
    with pytest.raises(OptmapError, match="bandwidth_gbps"):
        chain([GroupSpec(TPU_V3, 4)], bandwidth_gbps=-3)


def test_fully_connected_clique_and_switch_agree():
    specs = [GroupSpec(TPU_V2, 3), GroupSpec(TPU_V3, 3)]
    clique = fully_connected(specs)
    star = fully_connected(specs, switch=True)
    assert clique.graph.number_of_edges() == 15 and star.graph.number_of_edges() == 6
    for a in range(6):
        for b in range(6):
            assert clique.path_bandwidth(a, b) == star.path_bandwidth(a, b)
            assert clique.path_latency(a, b) == pytest.approx(star.path_latency(a, b))
    assert clique.path_bandwidth(0, 5) == 1e9 and clique.path_bandwidth(3, 5) == 2e9
    assert clique.hops(0, 5) == 1 and star.hops(0, 5) == 2


def test_fully_connected_1024_is_fast():
    t0 = time.perf_counter()
    s = fully_connected([GroupSpec(V100, 1024)])
    assert s.graph.number_of_edges() == 1024 and s.params["switch"] is True
    assert s.subset_bandwidth() == 300e9
    assert time.perf_counter() - t0 < 1.0


def test_hierarchical_tpu_256_fast_and_bandwidths():
    t0 = time.perf_counter()
    s = hierarchical([GroupSpec(TPU_V2, 128), GroupSpec(TPU_V3, 128)])
    assert s.path_bandwidth(0, 255) == 1e9  # min(8, 16) Gb/s across groups
    assert s.subset_bandwidth() == 1e9
    assert time.perf_counter() - t0 < 1.0
    assert s.path_bandwidth(128, 255) == 2e9 and s.path_bandwidth(0, 127) == 1e9
    assert s.path_latency(0, 1) == pytest.approx(1e-6)  # intra: latency_us
    assert s.path_latency(0, 255) == pytest.approx(2e-6)  # cross: latency_us + inter_latency_us
    assert s.count == 256 and not s.is_homogeneous
    assert s.kinds() == (TPU_V2, TPU_V3)
    assert s.group_of(200).name == "tpu-v3" and s.group_of(3).accelerator is TPU_V2
    rows = s.describe()
    assert [r["count"] for r in rows] == [128, 128] and rows[0]["network Gb/s"] == 8.0


def test_hierarchical_clique_and_switch_agree_and_inter_override():
    fpga = Accelerator.from_datasheet(
        "fpga", peak_tflops=1, memory_gib=1, memory_bandwidth_gBps=19.2, network_gbps=8
    )
    # MARS's F1 instance: two groups of 4, 8 Gb/s inside a group, 2 Gb/s between groups
    specs = [GroupSpec(fpga, 4), GroupSpec(fpga, 4)]
    a = hierarchical(specs, inter_bandwidth_gbps=2, switch=False)
    b = hierarchical(specs, inter_bandwidth_gbps=2, switch=True)
    assert a.graph.number_of_edges() == 28  # 8·7/2 pairs
    assert b.graph.number_of_edges() == 9  # 8 spokes + 1 trunk
    assert [g.name for g in a.groups] == ["fpga#0", "fpga#1"]
    for u in range(8):
        for v in range(8):
            assert a.path_bandwidth(u, v) == b.path_bandwidth(u, v)
            assert a.path_latency(u, v) == pytest.approx(b.path_latency(u, v))
    assert a.path_bandwidth(0, 4) == 0.25e9 and a.path_bandwidth(0, 3) == 1e9
    assert a.subset_bandwidth([0, 1, 2, 3]) == 1e9 and a.subset_bandwidth([0, 1, 4]) == 0.25e9


# -- routing on hand-made graphs ----------------------------------------------------------------------


def custom_system(n, edges, accelerator=TPU_V3):
    devices, groups = assign_devices([GroupSpec(accelerator, n)])
    g = device_graph(devices)
    for u, v, bw, lat in edges:
        g.add_edge(u, v, bandwidth=bw, latency=lat)
    return System(devices, groups, g, topology="custom")


def test_chain_bottleneck_link():
    s = custom_system(4, [(0, 1, 2e9, 1e-6), (1, 2, 0.5e9, 3e-6), (2, 3, 2e9, 1e-6)])
    assert s.path_bandwidth(0, 3) == 0.5e9  # the slow middle link
    assert s.path_bandwidth(2, 3) == 2e9
    assert s.path_latency(0, 3) == pytest.approx(5e-6)  # 1 + 3 + 1 µs
    assert s.hops(0, 3) == 3 and s.hops(2, 2) == 0
    assert s.path_bandwidth(1, 1) == math.inf and s.path_latency(1, 1) == 0.0
    assert s.subset_bandwidth([0, 1]) == 2e9 and s.subset_bandwidth([2]) == math.inf


def test_path_capped_by_endpoint_injection_bandwidth():
    s = custom_system(2, [(0, 1, 100e9, 0.0)])
    assert s.link(0, 1).bandwidth == 100e9
    assert s.path_bandwidth(0, 1) == TPU_V3.network_bandwidth


def test_widest_and_quickest_min_hop_path():
    # 0-1-3 is wide but slow, 0-2-3 narrow but quick; 0-4-5-3 is wider still but longer (ignored)
    s = custom_system(
        6,
        [
            (0, 1, 1.5e9, 5e-6), (1, 3, 1.5e9, 5e-6),
            (0, 2, 0.5e9, 1e-6), (2, 3, 0.5e9, 1e-6),
            (0, 4, 2e9, 0.0), (4, 5, 2e9, 0.0), (5, 3, 2e9, 0.0),
        ],
    )
    assert s.hops(0, 3) == 2
    assert s.path_bandwidth(0, 3) == 1.5e9
    assert s.path_latency(0, 3) == pytest.approx(2e-6)


def test_switch_nodes_and_link_errors():
    devices, groups = assign_devices([GroupSpec(TPU_V2, 3)])
    g = device_graph(devices)
    g.add_edges_from((i, "switch0", {"bandwidth": 5e9, "latency": 0.5e-6}) for i in range(3))
    s = System(devices, groups, g, topology="star")
    assert s.hops(0, 2) == 2 and s.path_bandwidth(0, 2) == 1e9
    assert s.link(0, "switch0") == Link(5e9, 0.5e-6)
    with pytest.raises(OptmapError, match="not directly linked"):
        s.link(0, 1)
    with pytest.raises(OptmapError, match="no device 7"):
        s.path_bandwidth(0, 7)
    with pytest.raises(OptmapError, match="repeats a device"):
        s.subset_bandwidth([0, 1, 0])


def test_system_validation():
    with pytest.raises(OptmapError, match="bandwidth must be > 0, got 0"):
        custom_system(2, [(0, 1, 0, 0.0)])
    with pytest.raises(OptmapError, match="latency must be >= 0"):
        custom_system(2, [(0, 1, 1e9, -1.0)])
    with pytest.raises(OptmapError, match="disconnected"):
        custom_system(3, [(0, 1, 1e9, 0.0)])
    devices, groups = assign_devices([GroupSpec(TPU_V2, 2)])
    with pytest.raises(OptmapError, match="device 1 is not in the graph"):
        g = nx.Graph()
        g.add_node(0, accelerator=TPU_V2)
        System(devices, groups, g)
    with pytest.raises(OptmapError, match="belongs to no group"):
        System(devices, (Group("a", TPU_V2, (0,)),), device_graph(devices))


def test_system_pickles():
    s = torus2d([GroupSpec(TPU_V2, 4), GroupSpec(TPU_V3, 4)], latency_us=0.5)
    s.path_bandwidth(0, 7)
    t = pickle.loads(pickle.dumps(s))
    assert t.params["shape"] == (4, 2) and t.count == 8
    assert t.path_bandwidth(0, 7) == s.path_bandwidth(0, 7) and t.kinds() == s.kinds()
    with pytest.raises(TypeError):
        t.params["shape"] = (8, 1)  # read-only
