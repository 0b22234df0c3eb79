"""megatron-3d engine: enumeration = brute force over the whole space, pins honoured, best plan."""

import numpy as np
import pytest

from optmap.plugins.llm.engine import enumerate_plans
from optmap.run import solve
from optmap.space import DesignSpace, categorical

from test_llm_model import problem


def _brute_force(model):
    """Every point of the space (grid), its validity and, per valid plan, its canonical form."""
    rows = np.concatenate(list(model.space.grid()))
    plans = model.plan_arrays(model.values(rows))
    bad = model.validity(plans)
    valid = ~(bad["gpus"] | bad["batch"] | bad["interleaving"])
    # a switch that cannot act is enumerated once (off); brute force canonicalises the same way
    inert = ((plans.tp == 1) & plans.sp) | ((plans.dp == 1) & (plans.zero | plans.overlap))
    return rows[valid & ~inert]


def test_enumeration_equals_filtered_grid():
    m = problem(preset="megatron-22b", gpus=16, batch=16, max_microbatch=4, max_interleaving=4).cost_model
    choices = {v.name: np.array(v.choices, dtype=object) for v in m.space.variables}
    X = enumerate_plans(m, choices)
    brute = _brute_force(m)
    assert len(X) == len(brute) > 0
    assert {tuple(r) for r in X} == {tuple(r) for r in brute}


def test_engine_best_is_the_exhaustive_minimum():
    p = problem(preset="megatron-22b", gpus=16, batch=16, max_microbatch=4, max_interleaving=4)
    result = solve(p)
    brute = _brute_force(p.cost_model)
    cols = p.cost_model.evaluate_batch(brute)
    best = cols["time"][cols["feasible"]].min()
    assert result.values["time"] == pytest.approx(best)
    assert result.extra["valid_plans"] == len(brute)
    assert result.extra["top1"].endswith(f"{best:.4g} s") and "top5" in result.extra
    assert result.report.feasible and result.report.metrics["memory_gib"] <= 78


class _Pinned:
    """An evaluator stand-in whose space narrows decisions to one value (what pinning does)."""

    def __init__(self, evaluator, fixed):
        self.__dict__.update(evaluator.__dict__)
        self._inner = evaluator
        self.space = DesignSpace(tuple(categorical(v.name, (fixed[v.name],)) if v.name in fixed else v
                                       for v in evaluator.space.variables))

    def evaluate(self, X):
        return self._inner.evaluate(X)

    @property
    def exhausted(self):
        return self._inner.exhausted


def test_engine_honours_pinned_decisions():
    from optmap.plugins.llm.engine import Megatron3DSearch
    from optmap.search import Evaluator

    p = problem()
    evaluator = Evaluator(p.cost_model, ("time",))
    fixed = {"tensor_parallel": 8, "pipeline_parallel": 8, "recompute": "full", "sequence_parallel": True}
    extra = Megatron3DSearch().search(_Pinned(evaluator, fixed), 0)
    best = p.cost_model.space.decode(evaluator.best_x).as_dict()
    assert all(best[k] == v for k, v in fixed.items())
    assert extra["top1"].startswith("t8 p8 d1")


@pytest.mark.parametrize("preset,gpus,batch,paper", [
    # Narayanan et al. SC'21 Table 2 (GPT-3 175B: tensor 8 x pipeline 12, micro-batch 1) and Table 1
    # (530B on 2,520 GPUs: tensor 8 x pipeline 35, full recomputation)
    ("gpt3-175b", 1536, 1536, {"tensor_parallel": 8, "pipeline_parallel": 12, "data_parallel": 16,
                               "microbatch_size": 1}),
    ("turing-530b", 2520, 2520, {"tensor_parallel": 8, "pipeline_parallel": 35, "data_parallel": 9,
                                 "microbatch_size": 1}),
])
def test_best_plan_at_least_as_fast_as_the_papers(preset, gpus, batch, paper):
    p = problem(preset, gpus, batch)
    m = p.cost_model
    result = solve(p)
    paper_plan = {**paper, "interleaving": 1, "recompute": "full", "sequence_parallel": False,
                  "optimizer_sharding": False, "dp_overlap": False}
    report = m.evaluate(m.space.mapping(paper_plan))
    assert report.feasible
    assert result.report.metrics["throughput"] >= report.metrics["throughput"]
    assert result.report.feasible and result.report.metrics["memory_gib"] <= 78
