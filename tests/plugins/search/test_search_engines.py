"""ga and optuna: optimum of small spaces (brute force), Pareto fronts, constraints, seeding,
reproducibility, budget handling, Optuna storage and in-process resume."""

import json

import numpy as np
import pytest

pytest.importorskip("pymoo")
pytest.importorskip("optuna")

from conftest import ROOT
from optmap.cost import BATCH, CostReport
from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.problem import Problem, SearchDefaults, load
from optmap.run import solve
from optmap.search import Budget
from optmap.space import DesignSpace, categorical, integer, real

HETERO = ROOT / "problems" / "accpar" / "hetero-vgg19.toml"


class Toy:
    """Mixed categorical / integer space with pairwise interactions and a unique optimum."""

    metrics = ("f", "g", "load")
    capabilities = frozenset({BATCH})

    def __init__(self, with_real: bool = False) -> None:
        variables = [categorical("a", "xyz"), categorical("b", ["p", "q", "r", "s"]), integer("n", 0, 9),
                     integer("m", -3, 3), categorical("c", [1, 2, 3])]
        if with_real:
            variables.append(real("r", -1.0, 1.0))
        self.space = DesignSpace(tuple(variables))

    def evaluate_batch(self, X):
        a, b, n, m, c = (X[:, i] for i in range(5))
        f = (np.array([0.4, 0.0, 0.7])[a.astype(int)] + np.array([0.9, 0.3, 0.0, 0.5])[b.astype(int)]
             * np.array([1.0, 2.0, 0.5])[c.astype(int)] + 0.1 * (n - 7) ** 2 + 0.25 * np.abs(m + 1)
             + 0.3 * (a == 1) * (c == 2))
        if X.shape[1] > 5:
            f = f + (X[:, 5] - 0.25) ** 2
        g = 0.2 * (9 - n) + np.array([0.0, 0.6, 0.3])[a.astype(int)] + 0.05 * (m + 3)
        return {"f": f, "g": g, "load": n + 2 * (b == 2)}

    def evaluate(self, mapping):
        columns = self.evaluate_batch(mapping.array[None])
        return CostReport({k: float(v[0]) for k, v in columns.items()})


def toy_problem(model=None, engine="ga", evaluations=1000, options=None, objectives=("f",), constraints=None):
    return Problem(
        name="toy", path=None, spec={"name": "toy", "cost": {"model": "toy"}}, workload=None, system=None,
        cost_model=model or Toy(), objectives=tuple(objectives), constraints=dict(constraints or {}),
        search=SearchDefaults(engine, 0, Budget(evaluations=evaluations), dict(options or {})), host=load_host(),
    )


def brute_force(model, objectives=("f",), constraints=None):
    """Every point of the space with its objectives, feasible ones only."""
    X = np.vstack(list(model.space.grid()))
    columns = model.evaluate_batch(X)
    F = np.column_stack([columns[name] for name in objectives])
    ok = np.ones(len(X), bool)
    for metric, limit in (constraints or {}).items():
        ok &= columns[metric] <= limit
    return X[ok], F[ok]


def pareto_set(F):
    """Non-dominated rows, by direct pairwise comparison."""
    keep = []
    for i, f in enumerate(F):
        dominated = any(np.all(g <= f) and np.any(g < f) for g in F)
        if not dominated:
            keep.append(tuple(f))
    return set(keep)


# -- ga --------------------------------------------------------------------------------------------


def test_ga_reaches_the_brute_force_optimum():
    X, F = brute_force(Toy())
    result = solve(toy_problem(evaluations=1500, options={"ga": {"pop_size": 40}}), "ga", seed=3)
    assert result.values["f"] == pytest.approx(F.min())
    assert result.best.as_dict() == Toy().space.decode(X[np.argmin(F[:, 0])]).as_dict()
    assert result.extra["algorithm"] == "GA"


def test_ga_respects_constraints():
    limits = {"load": 6}
    _, F = brute_force(Toy(), constraints=limits)
    result = solve(toy_problem(evaluations=1500, constraints=limits, options={"ga": {"pop_size": 40}}), "ga", seed=1)
    assert result.report.metrics["load"] <= 6
    assert result.values["f"] == pytest.approx(F.min())


def test_ga_real_variable_is_optimised_by_sbx_and_pm():
    result = solve(toy_problem(Toy(with_real=True), evaluations=3000, options={"ga": {"pop_size": 50}}), "ga", seed=0)
    _, F = brute_force(Toy())
    assert result.best["r"] == pytest.approx(0.25, abs=0.05)
    assert result.values["f"] == pytest.approx(F.min(), abs=3e-3)


def test_nsga2_front_equals_brute_force_front():
    objectives = ("f", "g")
    _, F = brute_force(Toy(), objectives)
    result = solve(toy_problem(evaluations=2000, objectives=objectives, options={"ga": {"pop_size": 40}}), "ga", seed=0)
    assert result.extra["algorithm"] == "NSGA-II"
    found = {tuple(v[name] for name in objectives) for _, v in result.front}
    assert {tuple(np.round(f, 9)) for f in found} == {tuple(np.round(f, 9)) for f in pareto_set(F)}


def test_ga_is_reproducible_for_a_seed():
    problem = toy_problem(evaluations=600, options={"ga": {"pop_size": 20}})
    one, two, other = solve(problem, "ga", seed=7), solve(problem, "ga", seed=7), solve(problem, "ga", seed=8)
    assert one.best.as_dict() == two.best.as_dict()
    assert [(h.evaluations, h.best) for h in one.history] == [(h.evaluations, h.best) for h in two.history]
    assert [(h.evaluations, h.best) for h in one.history] != [(h.evaluations, h.best) for h in other.history]


def test_ga_budget_cuts_the_last_generation_and_generation_limit():
    accpar = load(HETERO)
    cut = solve(accpar, "ga", seed=0, budget=Budget(evaluations=250))
    assert cut.evaluations == 250 and cut.stopped == "budget"
    three = solve(accpar, "ga", seed=0, options={"generations": 3, "pop_size": 30})
    assert three.evaluations == 90 and three.extra["ga_stop"] == "generations" and three.stopped == "complete"


def test_ga_patience_stops_a_converged_run():
    result = solve(toy_problem(evaluations=100_000, options={"ga": {"pop_size": 20, "patience": 5}}), "ga", seed=0)
    assert result.extra["ga_stop"] in ("patience", "converged")
    assert result.evaluations < 100_000


def test_ga_seeded_with_baseline_plans_starts_from_them():
    accpar = load(HETERO)
    native = solve(accpar, "accpar")
    seeded = solve(accpar, "ga", seed=0, budget=Budget(evaluations=400),
                   options={"seed_plans": ["dp", "owt", "accpar"], "pop_size": 40})
    assert seeded.extra["seed_plans"] == 3
    assert seeded.values["time"] <= native.values["time"] + 1e-12
    # the seeding engines' evaluations (dp 1, owt 1, accpar's) are counted in the budget and history
    assert seeded.evaluations == 400
    assert [h.evaluations for h in seeded.history[:3]] == [1, 2, 2 + native.evaluations]
    assert seeded.history[2].best == pytest.approx(native.values["time"])


def test_ga_options_are_checked():
    with pytest.raises(OptmapError, match="pop_size"):
        solve(toy_problem(), "ga", options={"pop_size": 1})
    with pytest.raises(OptmapError, match="unknown key 'population'"):
        solve(toy_problem(), "ga", options={"population": 10})
    with pytest.raises(OptmapError, match="seed_plans: unknown search engine 'nope'"):
        solve(toy_problem(), "ga", options={"seed_plans": ["nope"]})


def test_ga_resumed_from_checkpoint_equals_an_uninterrupted_run(tmp_path):
    problem = toy_problem(Toy(with_real=True), evaluations=1200, options={"ga": {"pop_size": 30}})
    whole = solve(problem, "ga", seed=5)

    def stop_after_400(evaluator):
        if evaluator.evaluations >= 400:
            evaluator.stop_requested = True

    path = tmp_path / "ga.checkpoint.json"
    first = solve(problem, "ga", seed=5, progress=stop_after_400, checkpoint=path)
    assert first.stopped == "interrupted" and first.evaluations == 420
    assert json.loads(path.read_text())["engine"]["generation"] == 14
    resumed = solve(problem, "ga", seed=5, checkpoint=path, resume=True)
    assert resumed.evaluations == whole.evaluations == 1200
    assert resumed.values == whole.values
    assert [(h.evaluations, h.best) for h in resumed.history] == [(h.evaluations, h.best) for h in whole.history]


# -- optuna ----------------------------------------------------------------------------------------


def test_optuna_tpe_reaches_the_brute_force_optimum():
    _, F = brute_force(Toy())
    result = solve(toy_problem(engine="optuna", evaluations=300), "optuna", seed=0)
    assert result.extra["sampler"] == "tpe" and result.evaluations == 300
    assert result.values["f"] == pytest.approx(F.min())


@pytest.mark.parametrize("sampler", ["random", "qmc", "nsga2", "cmaes"])
def test_optuna_samplers_run_and_are_reproducible(sampler):
    if sampler == "cmaes":
        pytest.importorskip("cmaes")
    problem = toy_problem(Toy(with_real=True), engine="optuna", evaluations=120, options={"optuna": {"sampler": sampler}})
    one, two = solve(problem, "optuna", seed=2), solve(problem, "optuna", seed=2)
    assert one.extra["sampler"] == sampler and one.evaluations == 120
    assert one.best.as_dict() == two.best.as_dict()
    assert [(h.evaluations, h.best) for h in one.history] == [(h.evaluations, h.best) for h in two.history]


def test_optuna_several_objectives_use_nsga2_and_find_front_points():
    objectives = ("f", "g")
    _, F = brute_force(Toy(), objectives)
    truth = {tuple(np.round(f, 9)) for f in pareto_set(F)}
    result = solve(toy_problem(engine="optuna", evaluations=400, objectives=objectives), "optuna", seed=0)
    assert result.extra["sampler"] == "nsga2"
    found = {tuple(np.round([v[name] for name in objectives], 9)) for _, v in result.front}
    assert found and found <= truth  # every point it reports is truly Pareto-optimal
    with pytest.raises(OptmapError, match="cmaes' handles one objective"):
        solve(toy_problem(engine="optuna", objectives=objectives, options={"optuna": {"sampler": "cmaes"}}), "optuna")


def test_optuna_enqueues_seed_plans_and_caps_trials(tmp_path):
    import optuna

    accpar = load(HETERO)
    native = solve(accpar, "accpar")
    journal = str(tmp_path / "seeded.log")  # a file path: Optuna's journal storage
    seeded = solve(accpar, "optuna", seed=0, options={"seed_plans": ["accpar"], "max_trials": 100,
                                                       "sampler": "random", "storage": journal})
    # accpar's own evaluations count, then its plan is the study's first trial
    assert seeded.evaluations == 100 and seeded.extra["trials"] == 100 - native.evaluations
    assert seeded.stopped == "budget"  # max_trials lowered the budget
    assert seeded.history[0].evaluations == native.evaluations
    assert seeded.values["time"] == pytest.approx(native.values["time"])
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(journal))
    first = optuna.load_study(study_name=seeded.extra["study"], storage=storage).trials[0]
    assert first.params == native.best.as_dict()
    assert first.values[0] == pytest.approx(native.values["time"])


def test_optuna_resumes_an_in_memory_study_from_its_checkpoint(tmp_path):
    problem = toy_problem(engine="optuna", evaluations=160, options={"optuna": {"batch": 16}})

    def stop_after_64(evaluator):
        if evaluator.evaluations >= 64:
            evaluator.stop_requested = True

    path = tmp_path / "optuna.checkpoint.json"
    first = solve(problem, "optuna", seed=1, progress=stop_after_64, checkpoint=path)
    assert first.stopped == "interrupted" and first.evaluations == 64
    assert len(json.loads(path.read_text())["engine"]["trials"]) == 64
    resumed = solve(problem, "optuna", seed=1, checkpoint=path, resume=True)
    again = solve(problem, "optuna", seed=1, checkpoint=path, resume=True)
    assert resumed.evaluations == 160 and resumed.extra["trials"] == 160
    assert resumed.values["f"] <= first.values["f"]
    assert [(h.evaluations, h.best) for h in resumed.history[: len(first.history) - 1]] == \
        [(h.evaluations, h.best) for h in first.history[:-1]]
    assert again.values == resumed.values  # a finished checkpoint resumes to the same answer


def test_optuna_storage_is_shared_and_resumed(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    problem = toy_problem(engine="optuna", evaluations=60, options={"optuna": {"storage": url, "batch": 20}})
    first = solve(problem, "optuna", seed=0)
    assert first.extra["study"] == "optmap-toy" and first.evaluations == 60
    with pytest.raises(OptmapError, match="already has 60 trials; pass --resume"):
        solve(problem, "optuna", seed=1)
    # a second worker (other seed) joins: it counts the study's trials, so the budget is study-wide
    more = solve(problem, "optuna", seed=1, budget=Budget(evaluations=100), resume=True)
    assert more.evaluations == 100 and more.extra["trials"] == 100
    assert more.values["f"] <= first.values["f"]
    import optuna

    study = optuna.load_study(study_name="optmap-toy", storage=url)
    assert len(study.trials) == 100 and study.best_value == pytest.approx(more.values["f"])
    alone = solve(toy_problem(engine="optuna", evaluations=60), "optuna", seed=0)
    assert alone.values == first.values  # one process with a storage = the same search in memory
    other = toy_problem(Toy(with_real=True), engine="optuna", options={"optuna": {"storage": url}})
    other.spec = {"name": "toy", "cost": {"model": "toy", "variant": "with-real"}}
    with pytest.raises(OptmapError, match="made for another problem"):
        solve(other, "optuna", seed=0, resume=True)
