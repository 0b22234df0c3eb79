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
