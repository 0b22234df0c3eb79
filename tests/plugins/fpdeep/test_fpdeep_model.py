"""The fpdeep cost model end to end: feasibility rules, the note's throughput bound, batch = single."""

from pathlib import Path

import numpy as np
import pytest

import optmap
from optmap.errors import OptmapError
from optmap.problem import build_problem, read_spec

PROBLEMS = Path(__file__).resolve().parents[3] / "problems" / "fpdeep"
NETS = ("alexnet", "vgg16", "vgg19")


def problem(net, count=15, accelerator="vc709", model=None, **cost):
    path = PROBLEMS / f"{net}-15.toml"
    spec = read_spec(path)
    spec["system"]["groups"][0].update(count=count, accelerator=accelerator)
    if model:
        spec["workload"]["model"] = model
    spec["cost"].update(cost)
    return build_problem(spec, path)


def check_report(model, report):
    """No link over its bandwidth in a feasible plan; every byte over BRAM priced in DRAM time."""
    if report.feasible:
        for link in report.plan["links"]:
            assert link["Gb/s"] <= link["capacity Gb/s"] * (1 + 1e-9), link
    for pos, row in enumerate(report.tables["devices"]):
        over = row["on-chip MB"] * 1e6 - model.bram[pos]
        if over > 0:
            assert row["DRAM MB/img"] * 1e6 >= 2 * over * (1 - 1e-9)
            # the DRAM traffic is part of the stage time, which the period covers
            assert row["stage us"] * 1e-6 >= row["DRAM MB/img"] * 1e6 / model.dram_rate[pos] * (1 - 1e-9)
            assert report.metrics["period"] >= row["stage us"] * 1e-6 * (1 - 1e-9)


@pytest.mark.parametrize("net", NETS)
def test_fpdeep_plans_and_random_mappings_respect_links_and_bram(net):
    p = problem(net)
    check_report(p.cost_model, optmap.solve(p).report)
    for x in p.cost_model.space.sample(np.random.default_rng(0), 8):
        check_report(p.cost_model, p.cost_model.evaluate(p.cost_model.space.decode(x)))


def test_link_bound_plans_run_at_the_link_rate():
    p = problem("vgg16", count=80)  # beyond the 150 Gb/s limit
    report = optmap.solve(p).report
    assert report.plan["bound"] == "links"
    assert max(link["use %"] for link in report.plan["links"]) == pytest.approx(100, abs=1e-6)
    check_report(p.cost_model, report)


@pytest.mark.parametrize("net", NETS)
def test_throughput_below_the_note_2_2_bound(net):
    # note §2.2: throughput ≈ f · U · DSP_max · N / (3 · Σ MAC) images/s at perfect balance
    p = problem(net)
    t = p.cost_model.table
    bound = 200e6 * 0.8 * 3600 * 15 / t.work.sum()
    thr = optmap.solve(p).report.metrics["throughput"]
    assert 0.97 * bound <= thr <= bound * (1 + 1e-12)


def test_metric_definitions():
    p = problem("alexnet")
    m = optmap.solve(p).report.metrics
    assert m["period"] == pytest.approx(1 / m["throughput"])
    assert m["epochs_per_hour"] == pytest.approx(3600 * m["throughput"] / 1_281_167)
    assert m["hours_per_epoch"] == pytest.approx(1 / m["epochs_per_hour"])
    assert m["gops_per_fpga"] == pytest.approx(p.cost_model.table.ops_per_image * m["throughput"] / 15 / 1e9)
    assert m["gops_per_joule"] == pytest.approx(m["gops_per_fpga"] * 15 / (15 * 31.6))
    assert m["power_watts"] == pytest.approx(15 * 31.6)
    assert 0 <= m["idle"] < 0.05  # §6.3.3: always under 5 %


def test_batch_evaluation_equals_single_evaluation():
    model = problem("vgg16", count=7).cost_model
    X = model.space.sample(np.random.default_rng(5), 6)
    batch = model.evaluate_batch(X)
    for i, x in enumerate(X):
        single = model.evaluate(model.space.decode(x))
        for name in model.metrics:
            assert batch[name][i] == pytest.approx(single.metrics[name], rel=1e-12, nan_ok=True)
        assert bool(batch["feasible"][i]) == single.feasible


def test_no_fallback_marks_overflow_infeasible():
    p = problem("vgg16", memory_fallback="none")
    report = p.cost_model.evaluate(p.cost_model.plans()["coarse"])
    assert not report.feasible and "BRAM" in report.reason


def test_bad_systems_are_one_line_errors():
    with pytest.raises(OptmapError, match="at most 626 FPGAs"):
        problem("alexnet", count=627, model="lenet")  # LeNet-5: 6 + 16 + 400 + 120 + 84 units at most
    with pytest.raises(OptmapError, match="tile per phase"):
        problem("alexnet", dsp_budget=0.05)  # 180 DSPs < 3 x 11 x 11 for conv1
    with pytest.raises(OptmapError, match="FPGA accelerators"):
        problem("alexnet", accelerator="v100")


def test_topologies_fpdeep_does_not_model_are_refused():
    """Issue 26: FPDeep models a chain (§4.2) and a pipeline snaked through a 2-D mesh / torus
    (Fig. 9); a ring was accepted and priced as a chain."""
    spec = read_spec(PROBLEMS / "alexnet-15.toml")
    spec["system"]["topology"] = "ring"
    with pytest.raises(OptmapError, match="topology 'ring' is not one FPDeep models.*chain, mesh2d, torus2d"):
        build_problem(spec, PROBLEMS / "alexnet-15.toml")


def test_variance_is_not_reported_when_an_fpga_gets_no_work():
    """Eq. 5 divides by the least work of any device: with every cut at 0, devices 0..N-2 get
    none, and the variance is undefined (NaN, printed "-"), not infinite."""
    p = problem("alexnet", count=4)
    model = p.cost_model
    idle = np.zeros(model.space.width)  # all cuts at slot 0: the last device does everything
    balanced = np.asarray(model.plans()["coarse"].array, float)
    scores = model.evaluate_batch(np.stack([idle, balanced]))
    assert np.isnan(scores["variance"][0])
    assert np.isfinite(scores["variance"][1]) and scores["variance"][1] >= 0
