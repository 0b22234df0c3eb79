"""Core primitives for composite formulations: workload slices, sub-systems, joined spaces, a
host-built inner model and reports that nest reports."""

import itertools
import math

import numpy as np
import pytest

from optmap.cost import CostReport
from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.saved import result_from_json
from optmap.space import DesignSpace, Part, categorical, integer, join
from optmap.system.subsystem import stage_transfer, sub_system
from optmap.workload.slicing import balanced_cuts, cut_positions, slice_workload

from conftest import ROOT, make_problem


def _problem(name="problems/accpar/hetero-vgg19.toml"):
    import optmap

    return optmap.load(ROOT / name)


def test_slice_keeps_inner_edges_and_names_the_crossing_tensors():
    wl = _problem().workload
    order = wl.order
    part = slice_workload(wl, range(5, 12))
    assert part.order == order[5:12]
    # every edge inside the slice is kept, every edge from outside becomes an input crossing
    inside = set(order[5:12])
    for v in part.order:
        assert set(part.inputs_of(v)) == {u for u in wl.inputs_of(v) if u in inside}
    assert [(c.producer, c.consumer) for c in part.inputs] == [(order[4], order[5])]  # VGG is a chain
    assert part.crossing_elements("inputs") == wl.layer(order[4]).out_elements
    assert part.crossing_elements("outputs") == wl.layer(order[11]).out_elements
    assert part.batch == wl.batch and slice_workload(wl, range(5, 12), batch=8).batch == 8
    with pytest.raises(OptmapError, match="has no layer 'conv99'"):
        slice_workload(wl, ["conv99"])


def test_cut_positions_match_a_brute_force_count_of_crossing_tensors():
    wl = _problem("problems/accpar/hetero-resnet18.toml").workload
    order = wl.order
    expected = []
    for i in range(1, len(order)):  # brute force: producers before i read at or after i
        crossing = {u for v in order[i:] for u in wl.inputs_of(v) if u in order[:i]}
        before = any(wl.layer(n).weighted for n in order[:i])
        if len(crossing) == 1 and before and wl.layer(order[i]).weighted:
            expected.append(i)
    assert cut_positions(wl) == tuple(expected)
    assert 0 < len(expected) < sum(wl.layer(n).weighted for n in order)  # never inside a residual block


def test_balanced_cuts_equal_brute_force_over_every_choice():
    wl = _problem().workload
    positions = cut_positions(wl)
    flops = [wl.phase_flops(layer.flops(wl.batch)).total for layer in wl.layers()]
    for groups in (2, 3, 4):
        def largest(cuts):
            edges = [0, *cuts, len(flops)]
            return max(sum(flops[a:b]) for a, b in zip(edges, edges[1:]))

        best = min(largest(c) for c in itertools.combinations(positions, groups - 1))
        assert largest(balanced_cuts(wl, positions, groups)) == pytest.approx(best)
    assert balanced_cuts(wl, positions, 100) == positions


def test_sub_system_keeps_the_parents_paths_and_cuts_the_groups():
    system = _problem().system  # 128 TPU-v2 (0..127) + 128 TPU-v3 (128..255), hierarchical
    devices = list(range(96, 160))
    sub = sub_system(system, devices)
    assert sub.count == 64 and [(g.name, g.count) for g in sub.groups] == [(system.groups[0].name, 32),
                                                                          (system.groups[1].name, 32)]
    assert sub.devices[0].name == "tpu-v2" and sub.devices[63].name == "tpu-v3"
    for a, b in [(0, 1), (0, 63), (31, 32), (40, 50)]:
        assert sub.path_bandwidth(a, b) == system.path_bandwidth(devices[a], devices[b])
        assert sub.path_latency(a, b) == system.path_latency(devices[a], devices[b])
    rate, latency = stage_transfer(system, range(0, 4), range(128, 132))
    assert rate == 4 * system.path_bandwidth(3, 128) and latency == system.path_latency(3, 128)
    with pytest.raises(OptmapError, match="lists a device twice"):
        sub_system(system, [1, 1])


def test_join_prefixes_names_conditions_and_runs_each_parts_repair_on_its_columns():
    inner = DesignSpace([categorical("a", ["x", "y"]), integer("b", 0, 3, active_if={"a": ["y"]})],
                        repair=lambda X: np.minimum(X, [1, 2]))  # caps b at 2
    joined = join([Part("", DesignSpace([integer("c", 0, 1)])),
                   Part("stage1", inner), Part("stage2", inner, (("n", (2,)),))],
                  head=[integer("n", 1, 2)])
    space = joined.space
    assert space.names == ["n", "c", "stage1.a", "stage1.b", "stage2.a", "stage2.b"]
    assert space.variables[space.index("stage2.b")].active_if == (("stage2.a", ("y",)), ("n", (2,)))
    x = space.repair(np.array([[1, 1, 1, 3, 1, 3]], float))[0]
    assert list(x) == [1, 1, 1, 2, 0, 0]  # stage1.b repaired to 2; stage 2 inactive when n = 1
    assert list(joined.part_rows(x[None], "stage1")[0]) == [1, 2]
    # distinct points, by hand: a part is a=x, or a=y with b in 0..2 (the repair caps b): 4 each;
    # n=1: c × stage1 = 2·4, n=2: c × stage1 × stage2 = 2·4·4
    assert sum(len(chunk) for chunk in space.grid()) == 2 * 4 + 2 * 4 * 4
    assert space.size >= 40  # an upper bound when a variable has several conditions
    assert space.pin({"stage2.a": "y"}).pinned == {"stage2.a": "y"}


def test_host_builds_a_registered_cost_model_by_name_with_validated_options():
    problem = _problem("problems/compose/small.toml")
    host = load_host()
    model = host.build("cost_model", "accpar", problem.workload, problem.system, options={"ratio_steps": 4})
    assert model.ratio_steps == 4
    with pytest.raises(OptmapError, match=r"cost model 'accpar'.*unknown key 'ratio_stepz'.*ratio_steps"):
        host.build("cost_model", "accpar", problem.workload, problem.system, options={"ratio_stepz": 4})
    with pytest.raises(OptmapError, match="unknown cost model 'acpar'; did you mean 'accpar'"):
        host.build("cost_model", "acpar", problem.workload, problem.system)


def test_a_report_keeps_its_childrens_reports_through_json():
    child = CostReport({"time": 1.0}, tables={"t": [{"a": 1}]})
    report = CostReport({"time": 2.0}, plan={"stages": 1}, children={"stage1": child})
    data = {"engine": "x", "seed": 0, "values": {"time": 2.0}, "report": report.to_json()}
    back = result_from_json(data).report
    assert back.children["stage1"].metrics == {"time": 1.0} and back.children["stage1"].tables == {"t": [{"a": 1}]}
    assert "children" not in child.to_json()  # a leaf's JSON is as before
    assert math.isclose(back.metrics["time"], 2.0)
