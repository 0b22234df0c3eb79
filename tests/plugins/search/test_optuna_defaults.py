"""optuna starts from the formulation's named plans by default, and says in one line when its
sampler is known to be weak for the space (issue 14)."""

import pytest

pytest.importorskip("optuna")

from optmap.plugins.search.optuna_search import MANY_CATEGORICAL, _weak_sampler_note  # noqa: E402
from optmap.run import solve  # noqa: E402
from optmap.space import DesignSpace, categorical, integer  # noqa: E402

from conftest import make_problem  # noqa: E402


def test_optuna_starts_from_the_cost_models_plans():
    problem = make_problem({
        "workload": {"model": "lenet-caffe", "batch": 64, "dtype": "bf16"},
        "system": {"topology": "hierarchical", "latency_us": 0.0,
                   "groups": [{"accelerator": "tpu-v2", "count": 2}, {"accelerator": "tpu-v3", "count": 2}]},
        "cost": {"model": "accpar"},
        "search": {"engine": "optuna", "budget": {"evaluations": 8}, "optuna": {"batch": 8}},
    })
    plans = problem.cost_model.plans()
    best_plan = min(problem.cost_model.evaluate(m).metrics["time"] for m in plans.values())
    seeded = solve(problem, "optuna", seed=0)
    # the four named plans are among the eight trials, so the best is at least as good as theirs
    assert len(plans) == 4 and seeded.values["time"] <= best_plan
    unseeded = solve(problem, "optuna", seed=0, options={"seed_plans": []})
    assert unseeded.evaluations == 8  # seed_plans = [] leaves the study to its sampler alone


def _space(n: int) -> DesignSpace:
    return DesignSpace(tuple(categorical(f"x{i}", ("a", "b", "c")) for i in range(n)) + (integer("k", 1, 9),))


def test_the_weak_sampler_note_names_a_better_engine():
    assert MANY_CATEGORICAL == 50
    note = _weak_sampler_note("tpe", _space(51))
    assert "51 categorical decisions" in note and "--search ga" in note and "\n" not in note
    assert _weak_sampler_note("tpe", _space(50)) == ""  # up to 50: no note
    assert _weak_sampler_note("nsga2", _space(200)) == ""  # NSGA-II does well on such spaces
    assert _weak_sampler_note("cmaes", _space(60)) != ""  # CMA-ES samples categorical parameters at random


def test_auto_picks_nsga2_for_many_categorical_decisions_and_caps_the_trials():
    # issue 27: TPE on the quickstart's 64 categorical decisions ran for minutes and learnt little
    from optmap.plugins.search.optuna_defaults import AUTO_TRIALS, SUGGESTIONS, auto_trials
    from optmap.plugins.search.optuna_search import OptunaSearch

    engine = OptunaSearch()
    assert engine._sampler_name(_space(51), 1) == "nsga2" and engine._sampler_name(_space(50), 1) == "tpe"
    assert engine._sampler_name(_space(3), 2) == "nsga2"  # several objectives
    assert OptunaSearch(sampler="tpe")._sampler_name(_space(51), 1) == "tpe"  # a named sampler is kept
    # 51 categorical + 1 integer = 52 parameters: 30,000 // 52 = 576 trials with NSGA-II, and
    # TPE's 5,000 // 52 = 96 is raised to the floor of 100; 3 parameters hit the ceiling of 1,000
    assert SUGGESTIONS["nsga2"] == 30_000 and SUGGESTIONS["tpe"] == 5_000 and AUTO_TRIALS == (100, 1_000)
    assert auto_trials("nsga2", _space(51)) == 576
    assert auto_trials("tpe", _space(51)) == 100
    assert auto_trials("nsga2", _space(2)) == 1_000
    pinned = _space(51).pin({f"x{i}": "a" for i in range(10)})  # pinned decisions are not proposed
    assert auto_trials("nsga2", pinned) == 30_000 // 42 == 714


def test_max_trials_auto_lowers_the_budget_and_the_progress_line_says_so():
    problem = make_problem({
        "workload": {"model": "lenet-caffe", "batch": 64, "dtype": "bf16"},
        "system": {"topology": "hierarchical", "latency_us": 0.0,
                   "groups": [{"accelerator": "tpu-v2", "count": 2}, {"accelerator": "tpu-v3", "count": 2}]},
        "cost": {"model": "accpar"},
        "search": {"engine": "optuna", "budget": {"evaluations": 20_000},
                   "optuna": {"sampler": "random"}},
    })
    free = sum(v.width for v in problem.space.variables if not v.is_pinned)
    notes = []
    result = solve(problem, "optuna", seed=0, progress=lambda e: notes.append((e.budget.evaluations, e.budget_note)))
    cap = min(1_000, max(100, 30_000 // free))  # AUTO_TRIALS and SUGGESTIONS["random"], by hand
    assert result.evaluations == cap and result.stopped == "budget"
    assert notes[-1] == (cap, f"optuna max_trials=auto: {cap:,}")
    unlimited = solve(problem, "optuna", seed=0, options={"max_trials": 150})
    assert unlimited.evaluations == 150  # an explicit cap replaces auto's
