"""The fpdeep engine against exhaustive search (tiny cases) and the generic engines (equal
evaluations), and the scaling behaviour the paper reports."""

from pathlib import Path

import pytest

import optmap
from optmap.errors import OptmapError
from optmap.plugins.fpdeep.engine import FPDeepSearch
from optmap.plugins.fpdeep.hardware import fpga
from optmap.plugins.fpdeep.model import FPDeepCostModel
from optmap.plugins.generic.exhaustive import ExhaustiveSearch
from optmap.plugins.generic.random_search import RandomSearch
from optmap.plugins.hardware.topologies import chain
from optmap.plugins.search.ga import GeneticSearch
from optmap.plugins.search.optuna_search import OptunaSearch
from optmap.problem import build_problem, read_spec
from optmap.search import Budget, Evaluator
from optmap.system import GroupSpec
from optmap.workload import WorkloadBuilder

PROBLEMS = Path(__file__).resolve().parents[3] / "problems" / "fpdeep"


def tiny_model(count, gbps, bram, park_levels):
    """Two 3x3 convs (3->4->4) on 8x8 images, on FPGAs of 100 DSPs (80 usable: two 27-DSP tile sets)."""
    b = WorkloadBuilder("tiny", (3, 8, 8))
    b.conv2d(b.conv2d("input", 4, 3, padding=1, name="c1"), 4, 3, padding=1, name="c2")
    tiny = fpga("tiny", dsp_slices=100, bram_bytes=bram, clock_hz=1e6, link_ports=1, port_gbps=0.001,
                dram_bytes=1e9, dram_bandwidth=1e6, board_watts=1.0)
    system = chain([GroupSpec(tiny, count)], bandwidth_gbps=gbps, latency_us=0.0)
    return FPDeepCostModel(b.build(4), system, park_levels=park_levels)


def run(engine, model, budget=Budget()):
    evaluator = Evaluator(model, ["period"], budget=budget)  # minimised; the engines see -throughput alike
    engine.search(evaluator, 0)
    return float(evaluator.best_f[0]), evaluator.evaluations


# (FPGAs, Gb/s per link, BRAM bytes, park levels): compute-bound, link-bound, and BRAM-bound with
# parking (where the exhaustive optimum parks weights back and forth between neighbours)
@pytest.mark.parametrize("count, gbps, bram, levels", [
    (3, 1.0, 1e6, 0), (4, 0.05, 1e6, 0), (3, 1.0, 1100, 1), (3, 0.03, 1100, 1)])
def test_fpdeep_finds_the_exhaustive_optimum_on_tiny_cases(count, gbps, bram, levels):
    model = tiny_model(count, gbps, bram, levels)
    assert model.space.size <= 7000
    best, _ = run(ExhaustiveSearch(), model)
    found, evaluations = run(FPDeepSearch(), model)
    assert found == pytest.approx(best, rel=1e-6)
    assert evaluations < model.space.size / 50


def problem(net, count=15, accelerator="vc709"):
    path = PROBLEMS / f"{net}-15.toml"
    spec = read_spec(path)
    spec["system"]["groups"][0].update(count=count, accelerator=accelerator)
    return build_problem(spec, path)


def test_no_worse_than_the_generic_engines_at_equal_evaluations():
    model = problem("alexnet", count=6).cost_model
    found, evaluations = run(FPDeepSearch(), model)
    budget = Budget(evaluations=evaluations)
    for engine in (RandomSearch(), GeneticSearch(pop_size=max(2, evaluations)), OptunaSearch()):
        assert found <= run(engine, model, budget)[0]
    # and a GA with 100 times the evaluations does not beat it either
    assert found <= run(GeneticSearch(pop_size=50), model, Budget(evaluations=100 * evaluations))[0]


def test_throughput_never_falls_when_fpgas_are_added_below_the_link_limit():
    previous = 0.0
    for count in range(2, 31, 2):
        report = optmap.solve(problem("alexnet", count)).report
        assert report.plan["bound"] == "compute"
        assert report.metrics["throughput"] >= previous * (1 - 1e-9)
        previous = report.metrics["throughput"]


def test_paper_choices_at_15_fpgas():
    alex = optmap.solve(problem("alexnet")).report
    splits = {row.name: row.decisions["split"] for row in alex.layers}
    assert splits["conv1"] == "III"  # §4.1: OCP for AlexNet's 3-channel first layer
    assert alex.metrics["parked_bytes"] == 0 and alex.metrics["max_bram_use"] < 1  # §6.3.1: no balancing
    vgg = optmap.solve(problem("vgg16")).report
    assert vgg.metrics["parked_bytes"] > 0  # §6.3.1: VGG needs parameter balancing
    assert any(row["hosted MB"] > 0 for row in vgg.tables["devices"])


def test_engine_refuses_other_formulations():
    p = optmap.load(Path(__file__).resolve().parents[3] / "problems" / "accpar" / "homog-lenet.toml")
    with pytest.raises(OptmapError, match="plans only for fpdeep"):
        optmap.solve(p, engine="fpdeep")
    with pytest.raises(OptmapError, match="split_sweeps"):
        FPDeepSearch(split_sweeps=-1)


def test_pinned_splits_are_kept():
    pinned = optmap.load(PROBLEMS / "alexnet-15.toml", overrides=['fix={"split:conv1"="II"}'])
    report = optmap.solve(pinned).report
    assert report.layers[0].name == "conv1" and report.layers[0].decisions["split"] == "II"
    # ICP can cut AlexNet's 3-channel conv1 at only 3 places, so the pinned plan is slower
    assert report.metrics["throughput"] < optmap.solve(problem("alexnet")).report.metrics["throughput"]


def test_the_engine_describes_the_plan_it_returns_with_pins():
    """The engine's extras (parked devices) come from the pinned plan the evaluator scores, not
    from the engine's unpinned working vector (a user pinned park:0 = 8 and read 0 parked devices)."""
    root = Path(__file__).resolve().parents[3]
    problem = optmap.load(root / "problems" / "fpdeep" / "alexnet-15.toml", fixes=["park:0=8"])
    result = optmap.solve(problem)
    assert result.best["park:0"] == 8
    parked = result.report.metrics["parked_bytes"]
    assert (parked > 0) == (result.extra["parked_devices"] > 0)
