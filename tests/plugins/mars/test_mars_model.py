"""The mars cost model: latencies by hand (note §3), valid decoding, memory rule, baseline (Sec. VI-A)."""

import numpy as np
import pytest

from optmap.plugins.mars.designs import f1_fpga
from optmap.plugins.mars.level1 import Plan
from optmap.plugins.mars.model import MarsCostModel
from optmap.plugins.mars.topology import f1_16xlarge
from optmap.plugins.zoo.models import lenet, resnet18, vgg16
from optmap.system import GroupSpec

US = 1e-6


def lenet_model(**options):
    # 4 FPGAs in one peer group (8 Gb/s = 1e9 B/s, 1 µs per link), 2 Gb/s host links; the hand
    # values use SuperLIP's own cycle model (448 MAC/cycle), so design_peaks = "parameters" unless
    # a test asks for Table II's #PEs (test_design_peaks_from_table_ii_pes)
    options.setdefault("design_peaks", "parameters")
    system = f1_16xlarge([GroupSpec(f1_fpga(), 4)], group_size=4)
    return MarsCostModel(lenet(batch=1, dtype="fp16", phase="inference"), system, designs=["superlip"], **options)


def strategy(model, p, factors, ss=-1):
    return int(model.strategy_set(p).index(np.array([factors]), np.array([ss]))[0])


def score(model, plan):
    return model.evaluate_batch(model.plan_vector(plan)[None])


def test_one_set_of_four_by_hand():
    # LeNet conv1 (6, 1, 28, 28, 5, 5) and conv2 (16, 6, 10, 10, 5, 5) on all four FPGAs, SuperLIP
    model = lenet_model()
    assert model.candidates[0] == (0, 1, 2, 3)
    plan = Plan((0,), (0,), ((0, 1),), (strategy(model, 4, [1, 1, 4, 1, 1, 1]), strategy(model, 4, [1, 4, 1, 1, 1, 1])))
    conv1 = 1 * 1 * 1 * 2 * (7 * 14 * 25) / 200e6  # ES {H}×4: local H 7 → ⌈7/7⌉, W 28 → ⌈28/14⌉ = 2
    conv2 = 1 * 1 * 2 * 1 * (7 * 14 * 25) / 200e6  # ES {C_in}×4: C_in 2 → 1 tile; H 10 → 2, W 10 → 1
    allreduce = 2 * 3 * US + 2 * 3 / 4 * (1600 * 2) / 1e9  # ring over q = 4, Out 16·10·10 fp16
    relayout = US + 3 / 16 * (1176 * 2) / 1e9  # need a C_in quarter, hold an H quarter of it
    host = (US + 784 * 2 / 0.25e9) + (US + 1600 * 2 / 0.25e9)  # input image in, conv2 output out
    out = score(model, plan)
    assert out["time"][0] == pytest.approx(conv1 + conv2 + allreduce + relayout + host, rel=1e-12)
    assert out["compute_time"][0] == pytest.approx(conv1 + conv2)
    assert out["collective_time"][0] == pytest.approx(allreduce)
    assert out["relayout_time"][0] == pytest.approx(relayout)
    assert out["host_time"][0] == pytest.approx(host) and out["inter_set_time"][0] == 0
    assert out["largest_set"][0] == 4  # one set of all four FPGAs
    assert conv1 + conv2 + allreduce + relayout + host == pytest.approx(82.313e-6)
    # halo option (note §6.11): conv1 split along H with a 5-row kernel fetches 4 rows of 28 × 1 inputs
    halo = US + 4 * 28 * 1 * 2 / 1e9
    assert score(lenet_model(halo=True), plan)["time"][0] == pytest.approx(out["time"][0] + halo, rel=1e-12)


def test_two_sets_with_shared_shards_by_hand():
    model = lenet_model()
    pairs = [model.candidates.index((0, 1)), model.candidates.index((2, 3))]
    plan = Plan(tuple(pairs), (0, 0), ((0, 0), (1, 1)),
                (strategy(model, 2, [1, 1, 2, 1, 1, 1]), strategy(model, 2, [1, 1, 2, 1, 1, 1], ss=0)))
    conv1 = 2 * 2 * 2450 / 200e6  # ES {H}×2: H 14 → 2 tiles, W 28 → 2
    conv2 = 2 * 2450 / 200e6  # ES {H}, SS {C_out}: 2 phases of 8 output channels
    shared = US + (2400 / 2 * 2) / 1e9  # one ring step of half the (replicated) weight
    inter = US + 1176 * 2 / 1e9  # conv2's input from {0,1} to {2,3}
    host = (US + 784 * 2 / 0.25e9) + (US + 1600 * 2 / 0.25e9)
    out = score(model, plan)
    assert out["time"][0] == pytest.approx(conv1 + conv2 + shared + inter + host, rel=1e-12)
    assert out["inter_set_time"][0] == pytest.approx(inter)
    assert conv1 + conv2 + shared + inter + host == pytest.approx(101.324e-6)
    max_model = lenet_model(aggregate="max")  # pipelined period: the slower stage with its inbound traffic
    assert score(max_model, plan)["time"][0] == pytest.approx(max(conv1 + US + 784 * 2 / 0.25e9,
                                                                  conv2 + shared + inter + US + 1600 * 2 / 0.25e9))


def test_every_decoded_mapping_is_valid():
    system = f1_16xlarge([GroupSpec(f1_fpga(), 8)])
    model = MarsCostModel(resnet18(batch=1, dtype="fp16", phase="inference", image_size=64), system)
    rng = np.random.default_rng(1)
    n = len(model.layers)
    for x in model.space.sample(rng, 300):
        plan = model.plan_of(x)
        devices = [d for c in plan.sets for d in model.candidates[c]]
        assert sorted(devices) == list(range(8))  # disjoint sets covering all 8 devices
        assert plan.bounds[0][0] == 0 and plan.bounds[-1][1] == n - 1
        assert all(a <= b for a, b in plan.bounds)  # non-empty
        assert all(b + 1 == a2 for (_, b), (a2, _) in zip(plan.bounds, plan.bounds[1:]))  # contiguous
        for c, (a, b) in zip(plan.sets, plan.bounds):
            factors = model.strategy_set(len(model.candidates[c])).factors[list(plan.strategies[a:b + 1])]
            assert (factors <= model.graph.dims[a:b + 1]).all()
    assert model.evaluate_batch(model.space.sample(rng, 50))["feasible"].all()  # 1 GB holds ResNet-18


def test_memory_rule_makes_a_mapping_infeasible():
    system = f1_16xlarge([GroupSpec(f1_fpga(memory_gib=64e3 / 2**30), 4)], group_size=4)  # 64 kB DRAM
    model = MarsCostModel(lenet(batch=1, dtype="fp16", phase="inference"), system, designs=["superlip"])
    one = Plan((0,), (0,), ((0, 1),), (strategy(model, 4, [1, 1, 4, 1, 1, 1]),) * 2)
    # weights 2·(150 + 2400) = 5.1 kB; conv1 input + output boxes ¼·(784 + 4704)·2 = 2.7 kB: fits
    assert score(model, one)["feasible"][0]
    small = f1_16xlarge([GroupSpec(f1_fpga(memory_gib=6e3 / 2**30), 4)], group_size=4)  # 6 kB
    model = MarsCostModel(lenet(batch=1, dtype="fp16", phase="inference"), small, designs=["superlip"])
    out = score(model, one)
    assert not out["feasible"][0] and out["memory_fraction"][0] > 1
    report = model.evaluate(model.space.decode(model.plan_vector(one)))
    assert not report.feasible and "DRAM" in report.reason


def test_baseline_follows_sec_vi_a():
    system = f1_16xlarge([GroupSpec(f1_fpga(), 8)])
    model = MarsCostModel(vgg16(batch=1, dtype="fp16", phase="inference"), system)
    plan = model.baseline_plan
    assert [model.candidates[c] for c in plan.sets] == [(0, 1, 2, 3), (4, 5, 6, 7)]  # the two groups
    assert plan.bounds == ((0, 6), (7, 12))  # ⌈13/2⌉ = 7 layers first
    labels = [model.strategy_set(4).label(s) for s in plan.strategies]
    assert labels[0] == ("{H,W}", "∅")  # conv1 (64, 3, 224, 224, 3, 3): H and W longest (Table III)
    assert labels[-1] == ("{C_out,C_in}", "∅")  # conv13 (512, 512, 14, 14, 3, 3)
    for c, d, (a, b) in zip(plan.sets, plan.designs, plan.bounds):  # lowest computation latency
        rows = np.arange(a, b + 1)
        states = np.array(plan.strategies[a:b + 1])
        compute = [model.subproblem(c, k, a, b).table.compute[rows, states].sum() for k in range(3)]
        assert d == int(np.argmin(compute))
    assert model.baseline_time == pytest.approx(score(model, plan)["time"][0])
    assert model.plans()["baseline"].as_dict()["design:0-3"] == model.designs[plan.designs[0]].name


def test_fixed_designs_stall_to_the_slowest_member():
    from optmap.plugins.mars.designs import superlip, winograd
    from optmap.plugins.mars.topology import h2h_cluster

    system = h2h_cluster([GroupSpec(superlip(), 1), GroupSpec(winograd(), 1)], bandwidth_gbps=4)
    model = MarsCostModel(lenet(batch=1, dtype="fp16", phase="inference"), system, adaptive=False)
    assert "design:0-1" not in model.space.names  # no design genes in the fixed-design mode
    sub = model.subproblem(0, -1, 0, 1)  # the pair {superlip, winograd}
    alone = [model.subproblem(model.candidates.index((d,)), -1, 0, 1) for d in (0, 1)]
    two = model.strategy_set(2)
    h2 = strategy(model, 2, [1, 1, 2, 1, 1, 1])
    local = np.array([[6, 1, 14, 28, 5, 5]], float)
    times = [model.device_designs[d].seconds(local, np.ones(1))[0] for d in (0, 1)]
    assert sub.table.compute[0, h2] == max(times)
    assert len(two) == len(sub.table.compute[0]) and alone[0].table.compute.shape[1] == 1


def test_space_repair_is_canonical_and_sampler_follows_performance():
    system = f1_16xlarge([GroupSpec(f1_fpga(), 8)])
    model = MarsCostModel(vgg16(batch=1, dtype="fp16", phase="inference"), system)
    rng = np.random.default_rng(4)
    X = model.space.sample(rng, 400)
    again = model.space.repair(X)
    assert np.array_equal(again, X)  # sample() returns repaired rows and repair is idempotent
    raw = rng.random((20, model.space.width))
    canon = model.space.repair(raw)
    for x, y in zip(raw, canon):  # one vector per mapping, the same mapping
        assert model.plan_of(model.space.repair(x[None])[0]) == model.plan_of(y)
    # designs drawn in proportion to normalised performance (Sec. V): Winograd most often on VGG16
    # (the repair resets the designs of candidates that are not chosen, so count chosen sets only)
    picks = np.array([d for x in X for d in model.plan_of(x).designs])
    share = np.bincount(picks, minlength=3) / len(picks)
    expected = model.design_performance / model.design_performance.sum()
    assert np.abs(share - expected).max() < 0.05 and np.argmax(share) == 2
    mapping = model.space.decode(X[0]).as_dict()
    # 14 candidates: the F1 dendrogram's 15 less its root, the 8-FPGA set across the 2 Gb/s host
    # path (span_slowest_links = false, Sec. V: candidates are the sub-graphs the removals produce)
    assert len(mapping["sets"]) == 14 and set(mapping["features.0:es"]) == {"C_out", "C_in", "H", "W", "K_h", "K_w"}


def test_pinned_decisions_hold_for_the_native_engine():
    from optmap.problem import build_problem
    from optmap.run import solve

    spec = {"workload": {"model": "vgg11", "batch": 1, "dtype": "fp16", "phase": "inference", "image_size": 64},
            "system": {"topology": "f1-16xlarge", "groups": [{"accelerator": "f1-fpga", "count": 8}]},
            "cost": {"model": "mars"}, "fix": {f"design:{c}": "superlip" for c in ("0-3", "4-7", "0-1", "2-3", "4-5",
                                                                                  "6-7")},  # no 8-FPGA set
            "search": {"engine": "mars", "mars": {"pop1": 8, "gens1": 3, "pop2": 8, "gens2": 3}}}
    problem = build_problem(spec)
    result = solve(problem, "mars", seed=0)
    rows = [row for row in result.report.layers if "design" in row.decisions]
    assert {row.decisions["design"] for row in rows if len(row.decisions["set"]) > 1} <= {"superlip"}


def test_dram_roofline_bounds_a_layer_by_its_ddr_traffic():
    # LeNet conv1 (6, 1, 28, 28, 5, 5; 28×28 input, padding 2) ES {H}×4 on SuperLIP: compute-bound
    # 2 tiles × 7·14·25 cycles = 24.5 µs; its DDR traffic per device: input 784/4 + weights 150
    # (replicated) + output 6·28·28/4 = 1,522 elements × 2 B = 3,044 B, at 1e-4 GB/s = 30.44 ms.
    h4 = strategy(lenet_model(), 4, [1, 1, 4, 1, 1, 1])
    compute = lenet_model().subproblem(0, 0, 0, 1).table.compute[0, h4]
    slow = lenet_model(dram_gbytes_per_s=1e-4).subproblem(0, 0, 0, 1).table.compute[0, h4]
    fast = lenet_model(dram_gbytes_per_s=17).subproblem(0, 0, 0, 1).table.compute[0, h4]
    assert compute == pytest.approx(2 * 7 * 14 * 25 / 200e6)
    assert slow == pytest.approx(3044 / 1e5) and fast == compute  # 3,044 B at 17 GB/s: 0.18 µs < 24.5 µs


def test_design_peaks_from_table_ii_pes():
    # SuperLIP's parameters give 64·7 = 448 MAC/cycle, Table II's #PEs 438: "pes" scales its cycles
    # by 448/438 (LeNet conv1 ES {H}×4: 2 tiles × 7·14·25 cycles at 200 MHz)
    h4 = strategy(lenet_model(), 4, [1, 1, 4, 1, 1, 1])
    scaled = lenet_model(design_peaks="pes").subproblem(0, 0, 0, 1).table.compute[0, h4]
    assert scaled == pytest.approx(2 * 7 * 14 * 25 / 200e6 * 448 / 438)


def test_default_design_peaks_are_table_ii_pes():
    # Sec. VI-A: "To make their theoretical performance comparable, we ... use design parameters
    # with similar numbers of PEs" (Table II: 438, 572, 576). By default each design's cycles are
    # scaled to that peak. LeNet conv1 (6, 1, 28, 28, 5, 5) on one FPGA, by hand:
    # SuperLIP 1·1·4·2 tiles × 7·14·25 = 19,600 cycles × 448/438; systolic ⌈6/11⌉·⌈28/13⌉·⌈1/8⌉ ×
    # 28·25 = 2,100 cycles × 1,144/572 = 4,200 cycles; 200 MHz.
    system = f1_16xlarge([GroupSpec(f1_fpga(), 4)], group_size=4)
    model = MarsCostModel(lenet(batch=1, dtype="fp16", phase="inference"), system, designs=["superlip", "systolic"])
    one = model.candidates.index((0,))
    superlip, systolic = (model.subproblem(one, d, 0, 1).table.compute[0, 0] for d in (0, 1))
    assert superlip == pytest.approx(19_600 * 448 / 438 / 200e6)
    assert systolic == pytest.approx(4_200 / 200e6)
