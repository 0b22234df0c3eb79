"""Peak memory per GPU is the fullest pipeline stage's own sum (plugins/llm/footprint.py)."""

import numpy as np
import pytest

from optmap.plugins.llm import footprint
from optmap.problem import build_problem


def test_the_fullest_stage_is_a_max_of_sums_not_a_sum_of_maxes():
    # stage 0 has the most activations, stage 1 the most weights: the peak is stage 1's 10 + 6 = 16,
    # not 10 + 8 = 18; a stage that does not exist (present false) never counts
    stages = [{"total": np.array([15.0, 15.0]), "activations": np.array([8.0, 8.0]), "weights": 7.0},
              {"total": np.array([16.0, 16.0]), "activations": np.array([6.0, 6.0]), "weights": 10.0}]
    peak = footprint.fullest(stages, [np.array(True), np.array([True, False])])
    assert peak["total"].tolist() == [16.0, 15.0] and peak["weights"].tolist() == [10.0, 7.0]
    # of stages that tie, the one holding the most activations is reported
    tie = footprint.fullest([{"total": 5.0, "activations": 1.0}, {"total": 5.0, "activations": 3.0}], [True, True])
    assert float(tie["activations"]) == 3.0


def test_llama_405b_interleaved_peak_is_a_middle_stage_by_hand():
    """Llama 3.1 405B, TP 8 × PP 8 × VP 8 × CP 2 on 512 H100s (dgxc-benchmarking 25.05's layout):
    126 layers in 64 chunks of 2, the first and last of 1 (the embedding and the loss count as
    layers), so the first device holds 15 layers and the embedding (263M parameters per rank), a middle
    one 16 layers. The weights counted are the middle device's 16 layers, not 16 layers and the
    embedding as a sum of the stages' maxima would have it."""
    problem = build_problem({
        "workload": {"model": "transformer", "preset": "llama3.1-405b", "batch": 256, "dtype": "bf16"},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": 512}]},
        "cost": {"model": "megatron-3d"}, "search": {"engine": "megatron-3d"}})
    m = problem.cost_model
    r = m.evaluate(m.space.mapping({
        "tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 4, "context_parallel": 2,
        "microbatch_size": 1, "interleaving": 8, "recompute": "none", "sequence_parallel": True,
        "optimizer_sharding": True, "dp_overlap": True, "fsdp": False}))
    weights = {row["part"]: row["GiB"] for row in r.tables["memory_per_gpu"]}["weights (16-bit)"]
    layer = m.config.layer_params / 8  # one layer's parameters per tensor-parallel rank
    assert weights * 2**30 == pytest.approx(2 * 16 * layer, rel=1e-9)


def test_summed_adds_terms_of_any_broadcast_shape():
    # a (2, 3) grid, a row, a column and a scalar, added by hand
    terms = [np.arange(6.0).reshape(2, 3), np.ones((1, 3)), 2.0, np.array([[10.0], [20.0]])]
    assert footprint.summed(terms).tolist() == [[13.0, 14.0, 15.0], [26.0, 27.0, 28.0]]
    assert footprint.summed(iter([1, 2])).shape == ()  # scalars stay a 0-d float


def test_a_search_without_the_memory_breakdown_scores_the_same_plans():
    """The search leaves the time and memory parts out (timing.evaluate(breakdown=False)) and sums the
    per-micro-batch parts before multiplying by the micro-batches; the total memory and feasibility are
    those of the full evaluation, plan by plan, and the time is to rounding (the same sum, reassociated),
    so the fastest plan is the same. Throughput and TFLOP/s are derived when read."""
    from optmap.plugins.llm.engine import plan_table, score_all, enumerate_shapes
    problem = build_problem({
        "workload": {"model": "transformer", "preset": "llama3-8b", "batch": 64, "dtype": "bf16"},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": 16}]},
        "cost": {"model": "megatron-3d"}, "search": {"engine": "megatron-3d"}})
    model = problem.cost_model
    allowed = {v.name: np.array([v.pinned] if v.is_pinned else list(v.choices), dtype=object)
               for v in problem.space.variables}
    values, lean, _ = score_all(model, allowed, enumerate_shapes(model, allowed))
    full = model.score(model.plan_arrays(values))
    assert "memory_weights" not in lean and "memory_weights" in full and "forward_s" not in lean
    for name in ("memory", "feasible"):
        a, b = np.broadcast_arrays(lean[name], full[name])
        assert np.array_equal(a, b), name
    a, b = np.broadcast_arrays(lean["time"], full["time"])
    assert np.allclose(a, b, rtol=1e-12, atol=0.0)
    ok = np.broadcast_to(full["feasible"], a.shape)
    assert np.argmin(np.where(ok, a, np.inf)) == np.argmin(np.where(ok, b, np.inf))
    assert "throughput" in lean and np.allclose(lean["throughput"], full["throughput"], rtol=1e-12, atol=0.0)
    assert plan_table(model, allowed)[1]["time"].size > 100
