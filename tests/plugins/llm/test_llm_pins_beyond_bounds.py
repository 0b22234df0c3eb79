"""A published layout beyond the planner's search bounds is priced, not refused (plugins/llm/choices.py).

Issue 25 judges problem files that state a run's layout in ``--fix`` and nothing else in ``[cost]``.
Before, 10 of the 211 held-out runs stated that way were refused: DeepSeek-V3's 61 layers over 4, 8 or
16 stages or 4 × 4 chunks (no ``balanced`` split), and interleaving 20 (Llama 2 70B, NeMo 24.07) or 24
(Qwen3-30B-A3B, Bridge 25.11) above ``max_interleaving`` = 16. Each pin now prices what the same problem
with the bound or split set by hand prices: the expected values are those hand-set problems.
"""

import pytest

from optmap.errors import OptmapError
from optmap.problem import build_problem
from optmap.run import solve


def problem(preset, gpus, batch, fix, topology="dgx-h100", accelerator="h100-sxm", seq_len=None, **cost):
    length = {"seq_len": seq_len} if seq_len else {}
    return build_problem({
        "workload": {"model": "transformer", "preset": preset, "batch": batch, "dtype": "bf16", **length},
        "system": {"topology": topology, "groups": [{"accelerator": accelerator, "count": gpus}]},
        "cost": {"model": "megatron-3d", **cost}, "search": {"engine": "megatron-3d"}, "fix": fix})


def best_time(prob):
    return solve(prob).values["time"]


def variable(prob, name):
    return next(v for v in prob.space.variables if v.name == name)


# dgxc-benchmarking 25.05, DeepSeek-V3 on 512 H100s: TP 2, PP 8, EP 64, micro-batch 1 (heldout_dgxc.py)
DEEPSEEK_PP8 = {"tensor_parallel": 2, "pipeline_parallel": 8, "context_parallel": 1, "expert_parallel": 64,
                "data_parallel": 32, "microbatch_size": 1, "interleaving": 1, "fsdp": False}
# Megatron-Bridge 25.11, DeepSeek-V3 on 256 GB200s: PP 4 × VP 4 (16 chunks for 61 layers), EP 64
DEEPSEEK_4X4 = {"tensor_parallel": 1, "pipeline_parallel": 4, "context_parallel": 1, "expert_parallel": 64,
                "data_parallel": 64, "microbatch_size": 1, "interleaving": 4, "fsdp": False}
# Megatron-Bridge 25.11, Qwen3-30B-A3B on 16 H100s: PP 2 × VP 24 (one layer per chunk), EP 8, micro-batch 2
QWEN_VP24 = {"tensor_parallel": 1, "pipeline_parallel": 2, "context_parallel": 1, "expert_parallel": 8,
             "data_parallel": 8, "microbatch_size": 2, "interleaving": 24, "fsdp": False}


@pytest.mark.parametrize("preset,gpus,batch,fix,system,hand", [
    ("deepseek-v3", 512, 4096, DEEPSEEK_PP8, {}, {"uneven_stages": "layout"}),
    ("deepseek-v3", 256, 4096, DEEPSEEK_4X4, {"topology": "gb200-nvl72", "accelerator": "gb200"},
     {"uneven_stages": "layout"}),
    ("qwen3-30b-a3b", 16, 512, QWEN_VP24, {}, {"max_interleaving": 24}),
])
def test_a_published_pin_prices_as_the_hand_set_bound(preset, gpus, batch, fix, system, hand):
    plain = problem(preset, gpus, batch, fix, **system)
    by_hand = problem(preset, gpus, batch, fix, **system, **hand)
    assert best_time(plain) == pytest.approx(best_time(by_hand), rel=1e-12)


def test_the_search_space_is_unchanged_without_pins_beyond_it():
    free = problem("deepseek-v3", 512, 4096, {})
    inside = problem("deepseek-v3", 512, 4096, {"pipeline_parallel": 7, "interleaving": 1})  # 63 = 7 × 9
    assert free.cost_model.admit({"pipeline_parallel": 7, "interleaving": 1}) is free.cost_model
    assert [v.choices for v in inside.cost_model.space.variables] == [v.choices for v in free.cost_model.space.variables]
    assert inside.cost_model.options.uneven_stages == "balanced"
    widened = problem("deepseek-v3", 512, 4096, {"pipeline_parallel": 8})
    assert widened.cost_model.options.uneven_stages == "layout"
    assert 5 in variable(widened, "pipeline_parallel").choices  # every size up to the layers now


def test_a_micro_batch_beyond_the_bound_that_divides_the_batch_is_admitted():
    prob = problem("llama3-8b", 8, 256, {"microbatch_size": 32, "data_parallel": 8, "tensor_parallel": 1,
                                         "pipeline_parallel": 1})
    assert variable(prob, "microbatch_size").pinned == 32
    with pytest.raises(OptmapError, match="'microbatch_size': 24 is not one of"):  # 24 does not divide 256
        problem("llama3-8b", 8, 256, {"microbatch_size": 24})


def test_never_keeps_megatron_lms_old_rule():
    with pytest.raises(OptmapError, match="pipeline_parallel"):
        best_time(problem("deepseek-v3", 512, 4096, DEEPSEEK_PP8, uneven_stages="never"))



def test_a_context_parallel_size_beyond_the_default_bound_is_admitted():
    # 256K tokens: the default bound is max(32, 262,144 / 8,192) = 32 (context.default_limit); CP 64 splits
    # the sequence into 128 chunks of 2,048 and prices as with max_context_parallel = 64 set by hand
    fix = {"tensor_parallel": 8, "pipeline_parallel": 1, "context_parallel": 64, "data_parallel": 1,
           "microbatch_size": 1, "interleaving": 1}
    plain = problem("llama3-8b", 512, 1, fix, seq_len=262144)
    assert 64 not in variable(problem("llama3-8b", 512, 1, {}, seq_len=262144), "context_parallel").choices
    by_hand = problem("llama3-8b", 512, 1, fix, seq_len=262144, max_context_parallel=64)
    assert best_time(plain) == pytest.approx(best_time(by_hand), rel=1e-12)
