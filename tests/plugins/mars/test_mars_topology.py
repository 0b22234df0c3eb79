"""F1.16xlarge and H2H systems, and the AccSet candidates of MARS Sec. V."""

import pytest

from optmap.errors import OptmapError
from optmap.plugins.mars.designs import f1_fpga, superlip, systolic
from optmap.plugins.mars.topology import accset_candidates, f1_16xlarge, h2h_cluster, set_label
from optmap.system import GroupSpec

GB = 1e9 / 8  # bytes per second in one Gb/s


def f1(**options):
    return f1_16xlarge([GroupSpec(f1_fpga(), 8)], **options)


def test_f1_bandwidths_follow_sec_vi_a():
    system = f1()
    assert system.path_bandwidth(0, 3) == pytest.approx(8 * GB)  # same group, peer to peer
    assert system.path_bandwidth(3, 4) == pytest.approx(2 * GB)  # across groups, through the host
    assert system.hops(0, 1) == 1 and system.hops(0, 4) == 2
    assert system.subset_bandwidth((0, 1, 2, 3)) == pytest.approx(8 * GB)
    assert system.subset_bandwidth(tuple(range(8))) == pytest.approx(2 * GB)
    assert system.graph.get_edge_data(5, "host")["bandwidth"] == pytest.approx(2 * GB)
    assert system.path_latency(0, 4) == pytest.approx(2e-6)  # two links of 1 µs


def test_f1_dendrogram_with_bisected_ties():
    # remove the 2 Gb/s edges → the two groups; the tied 8 Gb/s edges → pairs then singletons (note §2.5)
    expected = [(0, 1, 2, 3, 4, 5, 6, 7), (0, 1, 2, 3), (4, 5, 6, 7), (0, 1), (2, 3), (4, 5), (6, 7),
                *((d,) for d in range(8))]
    assert list(accset_candidates(f1())) == expected


def test_distinct_bandwidth_levels_split_without_bisection():
    # 6 devices, groups of 3 (intra 8 Gb/s) behind a 2 Gb/s host: 3 tied singletons → bisect 2 + 1
    system = f1_16xlarge([GroupSpec(f1_fpga(), 6)], group_size=3)
    assert list(accset_candidates(system)) == [(0, 1, 2, 3, 4, 5), (0, 1, 2), (3, 4, 5), (0, 1), (3, 4),
                                               *((d,) for d in range(6))]


def test_h2h_cluster_keeps_fixed_designs_and_bandwidth_level():
    system = h2h_cluster([GroupSpec(superlip(), 2), GroupSpec(systolic(), 2)], bandwidth_gbps=1.2)
    assert system.path_bandwidth(0, 3) == pytest.approx(1.2 * GB)
    assert [a.name for a in system.devices] == ["superlip", "superlip", "systolic", "systolic"]
    assert accset_candidates(system)[:3] == ((0, 1, 2, 3), (0, 1), (2, 3))


def test_isolated_device_is_one_clear_line():
    system = f1()
    graph = system.graph.copy()
    graph.remove_edges_from(list(graph.edges(7)))
    from optmap.system import System

    with pytest.raises(OptmapError, match=r"device 7 cannot reach device 0") as info:
        System(system.devices, system.groups, graph, "broken")
    assert "\n" not in str(info.value)


def test_set_labels():
    assert set_label((0, 1, 2, 3)) == "0-3" and set_label((5,)) == "5" and set_label((0, 2)) == "0,2"


def test_h2h_cluster_takes_h2h_levels_unless_told_otherwise():
    """Issue 26: the documented levels are H2H's 1, 1.2, 2, 4, 10 Gb/s (MARS Sec. VI-C)."""
    groups = [GroupSpec(superlip(), 2)]
    with pytest.raises(OptmapError, match="bandwidth_gbps = 3 is not one of H2H's levels"):
        h2h_cluster(groups, bandwidth_gbps=3.0)
    system = h2h_cluster(groups, bandwidth_gbps=3.0, bandwidth_levels="any")
    assert system.path_bandwidth(0, 1) == pytest.approx(3.0 * GB)


def test_mars_candidates_are_the_sub_graphs_the_removals_produce():
    # Sec. V: removing F1's lowest edges (2 Gb/s, through the host) *produces* the groups {0..3} and
    # {4..7}; the whole system, which still holds those edges, is no candidate by default
    # (span_slowest_links = false): 15 dendrogram sets by hand (test above) less the root = 14.
    from optmap.plugins.mars.baseline import baseline_plan
    from optmap.plugins.mars.model import MarsCostModel
    from optmap.plugins.zoo.models import vgg11

    work = vgg11(batch=1, dtype="fp16", phase="inference", image_size=32)
    model = MarsCostModel(work, f1())
    assert model.candidates == tuple(accset_candidates(f1()))[1:] and len(model.candidates) == 14
    assert max(len(c) for c in model.candidates) == 4
    # the baseline keeps the topology's two groups (Sec. VI-A) whatever the search may use
    assert [model.candidates[c] for c in baseline_plan(model).sets] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    # the option brings the root back (note §2.5's reading: every component met on the way)
    assert MarsCostModel(work, f1(), span_slowest_links=True).candidates[0] == tuple(range(8))
    # one bandwidth level (H2H's cluster, a lone group): nothing spans a slower link, nothing dropped
    h2h = h2h_cluster([GroupSpec(superlip(), 2), GroupSpec(systolic(), 2)], bandwidth_gbps=1.2)
    assert accset_candidates(h2h, span_slowest=False) == accset_candidates(h2h)
