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


def test_pins_are_honoured_and_the_rest_is_optimal():
    fixes = ["fc:par=Data", "conv2:fwd:split=in16.mb2", "conv2:reuse=N", "conv1:upd:mb=0"]
    problem = load(SMALL, ["cost.dysm=false"], fixes=fixes)
    dsm = solve(problem, engine="dsm", options={"prune": "none"})
    brute = solve(problem, engine="exhaustive")
    assert dsm.values["time"] == pytest.approx(brute.values["time"], rel=1e-12)
    chosen = dsm.best.as_dict()
    assert chosen["fc:par"] == "Data" and chosen["conv2:fwd:split"] == "in16.mb2" and chosen["conv2:reuse"] == "N"


def _lstm_chain(layers: int, shape: list[int], **options) -> DSMCostModel:
    from optmap.plugins.zoo.recurrent import LSTM

    b = WorkloadBuilder("lstms", (4, 64))
    x = "input"
    for i in range(layers):
        x = b.op(LSTM(), x, (4, 64), name=f"lstm{i + 1}")
    system = dsm_torus([GroupSpec(build_dsm_chip(), shape[0] * shape[1])], shape=shape)
    return DSMCostModel(b.build(32, "fp16"), system, core_splits=[{"out": 32}], tile_levels=1, **options)


def test_pipe_groups_are_planned_exactly():
    # three LSTMs on a 2 x 4 torus form one pipe group (rows 2, 1, 1); brute force over 4,096 mappings
    model = _lstm_chain(3, [2, 4])
    assert [run.rows for run in model.runs] == [(2, 1, 1)]
    assert model.space.size == 4 * 2 * (4 * 2 * 2) ** 2 * 2
    assert best(model, DSMSearch(prune="none")) == pytest.approx(exhaustive(model), rel=1e-12)


def test_a_pipe_group_costs_fill_times_its_slowest_stage():
    from optmap.plugins.dsm.engine import _Planner
    from optmap.plugins.dsm.tables import TableBuilder

    model = _lstm_chain(3, [2, 4])
    planner = _Planner(model, TableBuilder(model, "none"), 0.0, frozenset())
    group = planner.groups["lstm1"]
    picked = [opts[k] for opts, k in zip(group["options"], group["picks"])]
    # (T + g - 1) = 4 + 3 - 1 steps of the slowest stage, per pass (§III-D), plus the one-off terms
    by_hand = 6 * np.max([o[2] for o in picked], axis=0).sum() + sum(o[3] for o in picked)
    assert group["cost"] == pytest.approx(by_hand, rel=1e-12)
    x = planner.plan({"lstm1": True})
    report = model.evaluate(model.space.decode(x))  # nothing outside the group: its cost is the time
    assert report.metrics["time"] == pytest.approx(by_hand, rel=1e-12)
    assert report.tables["pipe groups"][0]["on"] == "Y"


def test_progress_counts_to_the_plans_the_engine_scores(small_no_dysm):
    # the dsm engine plans by DP and scores its plans once; a bar counting to the search budget
    # (20,000 by default) would read "1/20,000" for a finished search
    evaluator = Evaluator(small_no_dysm, ["time"], budget=Budget(evaluations=20_000))
    extra = DSMSearch().search(evaluator, 0)
    assert evaluator.expected == extra["plans_scored"] == evaluator.evaluations
