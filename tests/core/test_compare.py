"""optmap compare: rows agree with the individual runs, exact optimum as the reference, files."""

import csv
import json
import math

import numpy as np
import pytest

pytest.importorskip("pymoo")

from conftest import ROOT
from optmap.cli import main
from optmap.comparison import compare
from optmap.cost import BATCH, CostReport
from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.problem import Problem, SearchDefaults, load
from optmap.run import solve
from optmap.search import Budget
from optmap.space import DesignSpace, integer

HETERO = ROOT / "problems" / "accpar" / "hetero-vgg19.toml"


class Bowl:
    """(x - 11)^2 + (y - 4)^2 + 2 on a 30 x 30 grid: the optimum, 2 at (11, 4), is known."""

    metrics = ("cost",)
    capabilities = frozenset({BATCH})

    def __init__(self, feasible_only_at_optimum=False):
        self.space = DesignSpace((integer("x", 0, 29), integer("y", 0, 29)))
        self.narrow = feasible_only_at_optimum

    def evaluate_batch(self, X):
        cost = (X[:, 0] - 11) ** 2 + (X[:, 1] - 4) ** 2 + 2.0
        feasible = cost <= 2 if self.narrow else np.ones(len(X), bool)
        return {"cost": cost, "feasible": feasible}

    def evaluate(self, mapping):
        columns = self.evaluate_batch(mapping.array[None])
        return CostReport({"cost": float(columns["cost"][0])}, feasible=bool(columns["feasible"][0]))


def bowl(narrow=False, evaluations=300):
    return Problem(name="bowl", path=None, spec={"cost": {"model": "bowl"}}, workload=None, system=None,
                   cost_model=Bowl(narrow), objectives=("cost",), constraints={},
                   search=SearchDefaults("random", 0, Budget(evaluations=evaluations), {"ga": {"pop_size": 20}}),
                   host=load_host())


def row(table, engine):
    return next(r for r in table.rows if r["engine"] == engine)


def test_rows_agree_with_individual_runs_on_accpar():
    problem = load(HETERO)
    budget = Budget(evaluations=1500)
    table = compare(problem, ["dp", "owt", "hypar", "accpar", "ga", "random"], seeds=[0, 1], budget=budget, baseline="dp")
    assert table.best_known_source == "best found"  # no exact engine on this formulation
    singles = {(e, s): solve(problem, e, seed=s, budget=budget) for e in ("accpar", "ga", "random") for s in (0, 1)}
    assert table.best_known == min(r.values["time"] for r in singles.values())
    for engine in ("ga", "random"):
        values = [singles[engine, s].values["time"] for s in (0, 1)]
        r = row(table, engine)
        assert (r["best_min"], r["best_max"], r["best_mean"]) == (min(values), max(values), pytest.approx(np.mean(values)))
        assert r["runs"] == 2 and r["failed"] == 0 and r["evaluations"] == 1500
    accpar = row(table, "accpar")
    assert accpar["gap_percent"] == 0 and accpar["within_1pct"] == 2
    assert accpar["evals_to_1pct"] == singles["accpar", 0].evaluations
    dp = row(table, "dp")
    assert dp["speedup"] == 1.0 and dp["within_1pct"] == 0 and math.isnan(dp["evals_to_1pct"])
    assert row(table, "accpar")["speedup"] == pytest.approx(dp["best_mean"] / accpar["best_mean"])
    assert [(run.engine, run.seed) for run in table.runs][:4] == [("dp", 0), ("dp", 1), ("owt", 0), ("owt", 1)]


def test_exact_engine_sets_the_reference_and_time_to_one_percent():
    table = compare(bowl(), ["exhaustive", "random", "ga"], seeds=[0, 1, 2])
    assert table.best_known_source == "exact optimum" and table.best_known == 2.0
    exhaustive = row(table, "exhaustive")
    assert exhaustive["gap_percent"] == 0 and exhaustive["evaluations"] == 900  # the whole space, not the budget
    ga = row(table, "ga")
    for run in (r for r in table.runs if r.engine == "ga"):
        reached = next(h for h in run.history if h.best <= 2.0 * 1.01)
        assert reached.best == 2.0
    reach = [next(h.evaluations for h in r.history if h.best <= 2.02) for r in table.runs if r.engine == "ga"]
    assert ga["within_1pct"] == 3 and ga["evals_to_1pct"] == pytest.approx(np.mean(reach))


def test_exhaustive_cut_by_a_stop_is_not_exact():
    from optmap.comparison import _is_exact
    from optmap.plugins.generic.exhaustive import ExhaustiveSearch

    run = solve(bowl(), "exhaustive")
    assert _is_exact(ExhaustiveSearch(), run)
    run.stopped = "interrupted"
    assert not _is_exact(ExhaustiveSearch(), run)


def test_failed_runs_are_counted_and_the_comparison_goes_on():
    table = compare(bowl(narrow=True, evaluations=5), ["random", "exhaustive"], seeds=[0])
    random_row = row(table, "random")
    assert random_row["failed"] == 1 and random_row["runs"] == 0 and math.isnan(random_row["best_mean"])
    assert row(table, "exhaustive")["best_mean"] == 2.0
    assert table.runs[0].extra["error"].startswith("engine 'random' found no feasible mapping")
    with pytest.raises(OptmapError, match=r"no run produced a result: random \(seed 0\): engine 'random' found no "
                                          r"feasible mapping"):
        compare(bowl(narrow=True, evaluations=5), ["random"])


def test_engines_are_checked_before_any_run():
    with pytest.raises(OptmapError, match="needs the capability 'layer_chain_tables'"):
        compare(bowl(), ["random", "hypar"])
    with pytest.raises(OptmapError, match="baseline 'dp' is not among"):
        compare(bowl(), ["random"], baseline="dp")


def test_command_writes_table_histories_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "cmp"
    code = main(["compare", str(HETERO), "--search", "dp,accpar,ga", "--seeds", "0,1",
                 "--set", "search.budget.evaluations=600", "--json", f"{out}.json", "--csv", f"{out}.csv",
                 "--plot", f"{out}.png"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "accpar" in printed and "gap_percent" in printed
    data = json.loads((tmp_path / "cmp.json").read_text())
    assert [r["engine"] for r in data["rows"]] == ["dp", "accpar", "ga"] and len(data["runs"]) == 6
    assert all(run["history"] for run in data["runs"])
    with open(tmp_path / "cmp.csv") as handle:
        assert [r["engine"] for r in csv.DictReader(handle)] == ["dp", "accpar", "ga"]
    with open(tmp_path / "cmp.history.csv") as handle:
        history = list(csv.DictReader(handle))
    ga_runs = [run for run in data["runs"] if run["engine"] == "ga"]
    assert sum(r["engine"] == "ga" for r in history) == sum(len(run["history"]) for run in ga_runs)
    assert (tmp_path / "cmp.png").stat().st_size > 10_000
    assert main(["compare", str(HETERO), "--search", "dp", "--seeds", "0,x"]) == 2
    assert "--seeds '0,x'" in capsys.readouterr().err
