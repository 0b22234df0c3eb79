"""Parallel scoring: local worker processes and a Dask cluster give the in-process answers."""

import numpy as np
import pytest

from conftest import ROOT
from optmap.cli import main
from optmap.cost import BATCH, CostReport, evaluate_batch
from optmap.errors import OptmapError
from optmap.host import load_host
from optmap.parallel import ParallelScorer
from optmap.problem import Problem, SearchDefaults, load
from optmap.run import solve
from optmap.search import Budget
from optmap.space import DesignSpace, categorical, integer

HETERO = ROOT / "problems" / "accpar" / "hetero-vgg19.toml"


class OneByOne:
    """A cost model without a batch evaluator: every mapping is scored in Python."""

    metrics = ("cost",)
    capabilities = frozenset()

    def __init__(self):
        self.space = DesignSpace((categorical("kind", "abc"), integer("n", 0, 40), integer("m", 0, 40)))

    def evaluate(self, mapping):
        kind, n, m = mapping["kind"], mapping["n"], mapping["m"]
        cost = {"a": 1.0, "b": 0.5, "c": 2.0}[kind] * (n - 17) ** 2 + (m - 3) ** 2 + 1
        return CostReport({"cost": float(cost)}, feasible=n + m <= 60)


def problem(model):
    return Problem(name="one-by-one", path=None, spec={"cost": {"model": "one-by-one"}}, workload=None, system=None,
                   cost_model=model, objectives=("cost",), constraints={},
                   search=SearchDefaults("random", 0, Budget(evaluations=600), {}), host=load_host())


def test_local_workers_score_like_the_process_itself():
    model = OneByOne()
    X = model.space.sample(np.random.default_rng(0), 97)
    serial = evaluate_batch(model, X)
    with ParallelScorer(model, workers=2) as scorer:
        parallel = scorer(X)
        assert scorer.slots == 2
    assert set(parallel) == set(serial)
    for key in serial:
        np.testing.assert_array_equal(parallel[key], serial[key])
    alone = solve(problem(model), "random", seed=4)
    pooled = solve(problem(model), "random", seed=4, workers=2)
    assert pooled.values == alone.values and pooled.best.as_dict() == alone.best.as_dict()
    assert [(h.evaluations, h.best) for h in pooled.history] == [(h.evaluations, h.best) for h in alone.history]


def test_workers_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["run", str(HETERO), "--search", "random", "--set", "search.budget.evaluations=2000",
                 "--workers", "2", "--json", str(out), "--quiet"])
    assert code == 0 and out.exists()
    alone = solve(load(HETERO), "random", budget=Budget(evaluations=2000))
    import json

    assert json.loads(out.read_text())["values"]["time"] == pytest.approx(alone.values["time"], rel=1e-12)
    assert main(["run", str(HETERO), "--search", "random", "--workers", "0", "--json", str(out)]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err


def test_unpicklable_model_is_a_clear_error():
    model = OneByOne()
    model.hook = lambda: None  # lambdas do not pickle
    with pytest.raises(OptmapError, match="cannot be sent to worker processes"):
        ParallelScorer(model, workers=2)


def test_dask_cluster_with_two_workers():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        model = OneByOne()
        X = model.space.sample(np.random.default_rng(1), 50)
        with ParallelScorer(model, scheduler=cluster.scheduler_address) as scorer:
            assert scorer.slots == 2
            np.testing.assert_array_equal(scorer(X)["cost"], evaluate_batch(model, X)["cost"])
        alone = solve(problem(model), "random", seed=2)
        clustered = solve(problem(model), "random", seed=2, scheduler=cluster.scheduler_address)
        assert clustered.values == alone.values and clustered.evaluations == alone.evaluations


def test_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    with pytest.raises(OptmapError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        ParallelScorer(OneByOne(), scheduler="tcp://127.0.0.1:9", timeout=0.5)


def test_batch_models_are_split_too():
    accpar = load(HETERO).cost_model
    assert BATCH in accpar.capabilities
    X = accpar.space.sample(np.random.default_rng(0), 64)
    with ParallelScorer(accpar, workers=2) as scorer:
        np.testing.assert_allclose(scorer(X)["time"], accpar.evaluate_batch(X)["time"], rtol=0, atol=0)
