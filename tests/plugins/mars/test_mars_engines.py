"""MARS engines through problem files, the evaluator and the CLI: mars, mars-baseline, h2h, generic ones."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from optmap.cli import main
from optmap.errors import OptmapError
from optmap.plugins.mars.h2h import computation_prioritised
from optmap.problem import build_problem, load
from optmap.run import solve
from optmap.search import Budget

PROBLEMS = Path(__file__).resolve().parents[3] / "problems" / "mars"
SMALL = {"pop1": 8, "gens1": 4, "pop2": 8, "gens2": 4}


def small_problem(model="resnet18", **cost):
    spec = {
        "workload": {"model": model, "batch": 1, "dtype": "fp16", "phase": "inference", "image_size": 64},
        "system": {"topology": "f1-16xlarge", "groups": [{"accelerator": "f1-fpga", "count": 8}]},
        "cost": {"model": "mars", **cost},
        "search": {"engine": "mars", "mars": dict(SMALL)},
    }
    return build_problem(spec)


def valid(model, mapping):
    plan = model.plan_of(mapping.array)
    devices = sorted(d for c in plan.sets for d in model.candidates[c])
    spans = [b - a + 1 for a, b in plan.bounds]
    return devices == list(range(model.system.count)) and min(spans) >= 1 and sum(spans) == len(model.layers)


def test_mars_is_reproducible_and_counts_its_cache():
    problem = small_problem(model="vgg11")
    result = solve(problem, "mars", seed=3)
    base = solve(problem, "mars-baseline")
    assert result.values["time"] < base.values["time"] == pytest.approx(problem.cost_model.baseline_time)
    assert result.report.metrics["reduction"] > 0 and valid(problem.cost_model, result.best)
    again = solve(problem, "mars", seed=3)
    assert again.best.vector == result.best.vector and again.values == result.values  # same seed, same mapping
    extra = result.extra
    assert extra["level2_solved"] > 0 and extra["level2_cache_hits"] > 0
    assert extra["cache_hit_rate"] == pytest.approx(extra["level2_cache_hits"] /
                                                    (extra["level2_cache_hits"] + extra["level2_solved"]))



@pytest.mark.parametrize("budget", [None, 20])
def test_progress_counts_to_the_generations_within_the_budget(budget):
    # after its seed plans, mars announces pop1 = 8 for generations 0..gens1 = 4 (SMALL), or what
    # is left of the budget when that is less; a bar counting to the default budget (20,000)
    # would read "33/20,000" for a finished search
    seen = []  # (evaluations, announced) at every progress call
    result = solve(small_problem(model="vgg11"), "mars", seed=0, budget=Budget(evaluations=budget),
                   progress=lambda evaluator: seen.append((evaluator.evaluations, evaluator.expected)))
    seeded = max(n for n, announced in seen if announced is None)
    announced = {a for _, a in seen if a is not None}
    assert announced == {min(budget or 10**9, seeded + 8 * 5)} and result.evaluations <= min(announced)

def test_exact_inner_and_level1_fitness_is_the_cost_model():
    problem = small_problem(model="vgg11")
    ga = solve(problem, "mars", seed=0)
    dp = solve(problem, "mars", seed=0, options={"inner": "dp"})
    model = problem.cost_model
    for run in (ga, dp):  # the evaluator's number is the cost model's number for the decoded mapping
        assert run.values["time"] == pytest.approx(model.evaluate(run.best).metrics["time"], rel=1e-12)
    # the exact level 2 can only help the same level-1 search (same seeds, same first population)
    assert dp.values["time"] <= ga.values["time"] * (1 + 1e-9)


def test_computation_prioritised_dp_matches_brute_force():
    spec = {
        "workload": {"model": "lenet", "batch": 1, "dtype": "fp16", "phase": "inference"},
        "system": {"topology": "h2h-cluster", "groups": [{"accelerator": "superlip", "count": 1},
                                                          {"accelerator": "systolic", "count": 1},
                                                          # LeNet's 5x5 kernels: Winograd runs them only when
                                                          # decomposed into 3x3 passes (its default refuses them)
                                                          {"accelerator": "winograd", "count": 1,
                                                           "large_kernels": "decompose"}]},
        "cost": {"model": "mars", "adaptive": False, "include_fc": True},
        "search": {"engine": "h2h"},
    }
    problem = build_problem(spec)
    model = problem.cost_model
    singles = [model.candidates.index((d,)) for d in range(3)]
    compute = [model.subproblem(c, -1, 0, len(model.layers) - 1).table.compute[:, 0] for c in singles]
    n = len(model.layers)  # 2 convs + 3 FC layers; winograd cannot run FC layers (inf)
    brute = min(sum(compute[d][a:b + 1].sum() for d, (a, b) in zip(order, zip((0, *cuts), (*(c - 1 for c in cuts), n - 1))))
                for order in itertools.permutations(range(3)) for cuts in itertools.combinations(range(1, n), 2))
    plan = computation_prioritised(model)
    got = sum(compute[model.candidates[c][0]][a:b + 1].sum() for c, (a, b) in zip(plan.sets, plan.bounds))
    assert got == pytest.approx(brute) and np.isfinite(got)
    result = solve(problem, "h2h")
    assert result.values["time"] <= result.extra["step1_time"]  # re-mapping only accepts improvements


def test_h2h_plan_is_single_devices():
    problem = load(PROBLEMS / "h2h-casia-surf.toml", ["workload.image_size=48"])
    h2h = solve(problem, "h2h")
    model = problem.cost_model
    plan = model.plan_of(h2h.best.array)
    assert sorted(model.candidates[c] for c in plan.sets) == [(d,) for d in range(8)]
    assert set(plan.strategies) == {0}  # one device per set: no sharding


@pytest.mark.parametrize("engine", ["random", "ga", "optuna"])
def test_generic_engines_search_the_mars_formulation(engine):
    problem = small_problem(model="vgg11")
    result = solve(problem, engine, seed=1, budget=Budget(evaluations=24))
    assert result.evaluations == 24 and valid(problem.cost_model, result.best)
    assert result.values["time"] == pytest.approx(problem.cost_model.evaluate(result.best).metrics["time"])


def test_cli_run_prints_sets_designs_shards_and_baseline(tmp_path, capsys):
    out = tmp_path / "vgg16.json"
    args = ["run", str(PROBLEMS / "vgg16.toml"), "--json", str(out)] + \
        [f"--set=search.mars.{k}={v}" for k, v in SMALL.items()]
    assert main(args) == 0
    text = capsys.readouterr().out
    for needle in ("set", "design", "ES", "SS", "features.0", "baseline_time", "reduction", "cache_hit_rate"):
        assert needle in text, needle
    result = json.loads(out.read_text())
    plan = result["report"]["plan"]
    assert plan["sets"] and plan["baseline_sets"] == ["0-3", "4-7"]
    rows = [r for r in result["report"]["layers"] if "ES" in r]
    assert len(rows) == 13 and {"set", "design", "ES", "SS"} <= set(rows[0])
    assert result["report"]["metrics"]["time"] < result["report"]["metrics"]["baseline_time"]


def test_level1_pinned_and_level2_searched_by_a_generic_engine():
    # the two levels through the core's pins: level-1 decisions of the baseline fixed, shards searched by ga
    problem = small_problem(model="vgg11")
    model = problem.cost_model
    baseline = model.plans()["baseline"].as_dict()
    level1 = {name: value for name, value in baseline.items()
              if model.space.variables[model.space.index(name)].tag("level") == 1}
    spec = {**problem.spec, "fix": level1}
    pinned = build_problem(spec)
    result = solve(pinned, "ga", seed=0, budget=Budget(evaluations=64))
    plan = pinned.cost_model.plan_of(result.best.array)
    assert plan.sets == model.baseline_plan.sets and plan.bounds == model.baseline_plan.bounds
    assert plan.designs == model.baseline_plan.designs


def test_mars_seeds_through_optmaps_seeding():
    """seed_plans names an engine: its answer joins the first population, scored as it is and paid
    for in the budget (optmap.search.seeding, as ga and optuna), so the elitist GA ends no worse."""
    from optmap.errors import OptmapError

    problem = small_problem(model="vgg11")
    h2h = solve(problem, "h2h")
    seeded = solve(problem, "mars", seed=0, options={**SMALL, "seed_plans": ["h2h"]})
    assert seeded.values["time"] <= h2h.values["time"]
    assert seeded.evaluations > h2h.evaluations  # h2h's evaluations are counted in the run's
    with pytest.raises(OptmapError, match="seed_plans: .*nowhere"):
        solve(problem, "mars", seed=0, options={**SMALL, "seed_plans": ["nowhere"]})


def test_h2h_refuses_a_device_that_can_run_no_layer():
    # LeNet has 5x5 and FC layers only; a default Winograd device runs neither, so H2H (every device a run)
    # has no plan: one clear error instead of a crash in the DP
    spec = {
        "workload": {"model": "lenet", "batch": 1, "dtype": "fp16", "phase": "inference"},
        "system": {"topology": "h2h-cluster", "groups": [{"accelerator": "systolic", "count": 1},
                                                          {"accelerator": "winograd", "count": 1}]},
        "cost": {"model": "mars", "adaptive": False, "include_fc": True},
        "search": {"engine": "h2h"},
    }
    with pytest.raises(OptmapError, match="h2h: no assignment"):
        solve(build_problem(spec), "h2h")
