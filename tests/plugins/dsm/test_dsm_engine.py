"""The dsm engine against exhaustive enumeration, the generic engines, and the optimisation toggles."""

from __future__ import annotations

import numpy as np
import pytest

from optmap.errors import OptmapError
from optmap.plugins.dsm.chip import build_dsm_chip
from optmap.plugins.dsm.engine import DSMSearch
from optmap.plugins.dsm.model import DSMCostModel
from optmap.plugins.dsm.torus import dsm_torus
from optmap.problem import build_problem, load, read_spec
from optmap.run import solve
from optmap.search import Budget, Evaluator
from optmap.system import GroupSpec
from optmap.workload import WorkloadBuilder
from tests.conftest import ROOT

SMALL = ROOT / "problems" / "dsm" / "small.toml"
TOGGLES = ("hybrid", "mem_opt", "dysm", "timestep_pipelining", "weight_preload")


def best(model, engine, **budget) -> float:
    evaluator = Evaluator(model, ["time"], budget=Budget(**budget))
    engine.search(evaluator, 0)
    return float(evaluator.best_f[0])


def exhaustive(model) -> float:
    """Brute force, written out: every point of the space, the smallest time."""
    return min(float(np.min(model.evaluate_batch(X)["time"])) for X in model.space.grid(1 << 15))


@pytest.fixture(scope="module")
def small_no_dysm():
    return load(SMALL, ["cost.dysm=false"]).cost_model  # 65,536 mappings


@pytest.mark.parametrize("prune", ["paper", "none"])
def test_dsm_equals_exhaustive_on_the_small_problem(small_no_dysm, prune):
    assert best(small_no_dysm, DSMSearch(prune=prune)) == pytest.approx(exhaustive(small_no_dysm), rel=1e-12)


def test_dsm_equals_exhaustive_with_tiles_and_reuse():
    # inference, three layers, two tile levels per dimension: 131,072 mappings, tiles and reuse exercised
    b = WorkloadBuilder("tiny", (32, 16, 16))
    x = b.activation(b.conv2d("input", 64, 3, padding=1, name="conv1"), name="relu1")
    x = b.maxpool2d(b.activation(b.conv2d(x, 64, 3, padding=1, name="conv2"), name="relu2"), 2, name="pool")
    b.linear(b.flatten(x, name="flat"), 128, name="fc")
    workload = b.build(8, "fp16", "inference")
    system = dsm_torus([GroupSpec(build_dsm_chip(), 2)], shape=[2, 1])
    model = DSMCostModel(workload, system, core_splits=[{"out": 32}], tile_levels=2, weight_preload=False,
                         hybrid=False)
    assert model.space.size == 2 * 16 * (2 * 2 * 16) ** 2
    assert best(model, DSMSearch(prune="none")) == pytest.approx(exhaustive(model), rel=1e-12)


def test_dsm_is_no_worse_than_generic_engines(small_no_dysm):
    dsm = best(small_no_dysm, DSMSearch())
    problem = load(SMALL, ["cost.dysm=false"])
    for engine in ("random", "ga"):
        result = solve(problem, engine=engine, seed=1, budget=Budget(evaluations=600))
        assert dsm <= result.values["time"] * (1 + 1e-12)


@pytest.mark.parametrize("toggle", TOGGLES)
def test_switching_an_optimisation_on_never_slows_the_best_plan(toggle):
    on = load(SMALL).cost_model
    off = load(SMALL, [f"cost.{toggle}=false"]).cost_model
    assert best(on, DSMSearch()) <= best(off, DSMSearch()) * (1 + 1e-12)


def test_more_chips_never_slow_the_best_plan():
    times = []
    for shape in ([2, 1], [2, 2], [4, 2], [4, 4]):
        spec = read_spec(SMALL)
        spec["system"]["shape"] = shape
        spec["system"]["groups"][0]["count"] = shape[0] * shape[1]
        times.append(best(build_problem(spec, SMALL).cost_model, DSMSearch()))
    assert times == sorted(times, reverse=True) and times[0] > times[-1]


def test_pinning_types_and_accpar_type_ii():
    model = load(SMALL).cost_model
    free = best(model, DSMSearch())
    pinned = best(model, DSMSearch(pin={"fc": "III", "conv1": "Data"}))  # AccPar Type-III = Model
    assert pinned >= free
    evaluator = Evaluator(model, ["time"])
    DSMSearch(pin={"fc": "III"}).search(evaluator, 0)
    assert model.space.decode(evaluator.best_x)["fc:par"] == "Model"
    with pytest.raises(OptmapError, match="Type-II splits the input features"):
        DSMSearch(pin={"fc": "II"}).search(Evaluator(model, ["time"]), 0)


def test_named_plans_are_feasible_and_no_better_than_the_engine():
    model = load(SMALL).cost_model
    plans = model.plans()
    assert set(plans) == {"data-parallel", "model-parallel", "owt"}
    times = model.evaluate_batch(np.array([p.array for p in plans.values()]))["time"]
    assert np.isfinite(times).all() and times.min() >= best(model, DSMSearch()) * (1 - 1e-12)
    assert plans["owt"]["conv1:par"] == "Data" and plans["owt"]["fc:par"] == "Model"
