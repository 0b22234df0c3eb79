"""Systems that scale with groups, not devices (issue 14): a billion accelerators cost a few
objects, the device graph is built only for routing and refused in one line above its limit."""

import pickle
import tracemalloc

import numpy as np
import pytest

from optmap.collectives import collective_time
from optmap.errors import OptmapError
from optmap.plugins.hardware.accelerators import TPU_V2, TPU_V3
from optmap.plugins.hardware.topologies import fully_connected, hierarchical, ring, torus2d
from optmap.run import solve
from optmap.system import DeviceIds, DeviceKinds, GroupSpec
from optmap.system import graph as system_graph

from conftest import make_problem

BILLION = 2**30


def test_a_billion_devices_cost_kilobytes():
    tracemalloc.start()
    system = hierarchical([GroupSpec(TPU_V2, BILLION), GroupSpec(TPU_V3, BILLION)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1e6  # one pointer per device would be 16 GiB
    assert system.count == len(system.devices) == 2 * BILLION
    assert system.devices[BILLION - 1] is TPU_V2 and system.devices[BILLION] is TPU_V3 and system.devices[-1] is TPU_V3
    assert system.group_of(2 * BILLION - 1).name == "tpu-v3" and system.kinds() == (TPU_V2, TPU_V3)
    assert [row["devices"] for row in system.describe()] == ["0..1073741823", "1073741824..2147483647"]
    # a switch per group (above 64 devices), one spoke per device and one trunk between the switches
    assert system.links == 2 * BILLION + 1
    assert "2147483648 devices" in repr(system)


def test_routing_a_huge_system_is_one_line():
    system = fully_connected([GroupSpec(TPU_V3, BILLION)])
    with pytest.raises(OptmapError, match=r"GRAPH_SIZE_LIMIT") as error:
        system.path_bandwidth(0, 1)
    assert "\n" not in str(error.value) and "1,073,741,824 devices" in str(error.value)
    with pytest.raises(OptmapError, match=r"fewer devices or a cost model that works on groups"):
        collective_time(system, "all-reduce", 1e6)


def test_the_limit_is_checked_before_building(monkeypatch):
    monkeypatch.setattr(system_graph, "GRAPH_SIZE_LIMIT", 100)
    with pytest.raises(OptmapError, match="128 nodes and links"):  # a 64-ring: 64 nodes + 64 links
        ring([GroupSpec(TPU_V3, 64)]).subset_bandwidth()
    small = ring([GroupSpec(TPU_V3, 32)], latency_us=1.0)  # 32 + 32 = 64 elements: built
    assert small.hops(0, 16) == 16 and small.path_latency(0, 16) == pytest.approx(16e-6)  # 16 hops × 1 µs


def test_accpar_plans_a_billion_devices_without_the_graph():
    problem = make_problem({
        "workload": {"model": "vgg11", "batch": 512, "dtype": "bf16"},
        "system": {"topology": "fully-connected", "groups": [{"accelerator": "tpu-v3", "count": BILLION}]},
        "cost": {"model": "accpar", "flops": "2mac"},
    })
    result = solve(problem, engine="accpar")
    assert len(result.report.plan["levels"]) == 30  # 2^30 identical devices bisect 30 times
    # Computation is counted at the leaves: each of the 2^30 devices computes 2^-30 of every
    # layer's 2·MAC FLOPs (the workload IR's count) at TPU-v3's 420 TFLOP/s (AccPar Table 7).
    flops = sum(problem.workload.layer(name).flops(512).total for name in problem.cost_model.graph.names)
    assert result.values["time"] >= result.report.metrics["compute_time"]
    assert result.report.metrics["compute_time"] == pytest.approx(flops / BILLION / 420e12, rel=1e-9)
    with pytest.raises(OptmapError, match="GRAPH_SIZE_LIMIT"):
        problem.system.graph  # never built above: the accpar run would have failed otherwise


def test_lazy_graph_pickles_and_routes_as_built():
    system = torus2d([GroupSpec(TPU_V2, 4), GroupSpec(TPU_V3, 4)], latency_us=0.5)
    copy = pickle.loads(pickle.dumps(system))  # the recipe travels, the graph is built on arrival
    pairs = [(a, b) for a in range(8) for b in range(8)]
    assert [copy.path_bandwidth(a, b) for a, b in pairs] == [system.path_bandwidth(a, b) for a, b in pairs]
    assert sorted(copy.graph.edges(data="bandwidth")) == sorted(system.graph.edges(data="bandwidth"))
    # 4×2 torus: X wraps (4 per row × 2 rows), Y of size 2 has its single link per column (4)
    assert copy.links == system.graph.number_of_edges() == 12


def test_device_ids_read_like_tuples():
    ids = DeviceIds(range(4, 8))
    assert ids == (4, 5, 6, 7) and ids == [4, 5, 6, 7] and ids == range(4, 8) and ids != (4, 5, 6)
    assert ids.contiguous and ids[-1] == 7 and 5 in ids and 8 not in ids and len(ids) == 4
    assert hash(ids) == hash((4, 5, 6, 7))  # equal to the tuple, so hashed like it
    scattered = DeviceIds((0, 2, 4))
    assert not scattered.contiguous and scattered == (0, 2, 4) and list(scattered[1:]) == [2, 4]
    assert DeviceIds([3, 4, 5]).contiguous  # a run given as a list is stored as a range


def test_device_kinds_read_like_the_tuple_of_devices():
    kinds = DeviceKinds([(TPU_V2, 2), (TPU_V3, 1), (TPU_V2, 1)])
    assert list(kinds) == [TPU_V2, TPU_V2, TPU_V3, TPU_V2] and kinds == (TPU_V2, TPU_V2, TPU_V3, TPU_V2)
    assert kinds[-1] is TPU_V2 and kinds[2] is TPU_V3 and kinds[1:3] == (TPU_V2, TPU_V3)
    assert kinds.kinds() == (TPU_V2, TPU_V3) and kinds.kind_over(0, 2) is TPU_V2 and kinds.kind_over(1, 3) is None
    assert DeviceKinds.of([TPU_V2, TPU_V2, TPU_V3]).runs == ((TPU_V2, 2), (TPU_V3, 1))
    with pytest.raises(IndexError):
        kinds[4]
    assert np.array_equal(np.array([d.network_bandwidth for d in kinds]), [1e9, 1e9, 2e9, 1e9])  # 8 / 16 Gb/s
