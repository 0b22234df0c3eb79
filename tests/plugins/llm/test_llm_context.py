"""Context parallelism: ring step bytes and exposed time by hand, the CP ring's links, validity, memory."""

import numpy as np
import pytest

from optmap.plugins.hardware.accelerators import A100
from optmap.plugins.llm import context, memory, timing
from optmap.plugins.llm.cluster import dgx_h100, plan_links
from optmap.system import GroupSpec
from optmap.problem import build_problem


def llama405b(gpus=1024, seq_len=131072, **cost):
    return build_problem({
        "workload": {"model": "transformer", "preset": "llama3.1-405b", "batch": 16, "dtype": "bf16",
                     "seq_len": seq_len},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": gpus}]},
        "cost": {"model": "megatron-3d", **cost}, "search": {"engine": "megatron-3d"}})


def test_ring_step_bytes_and_exposed_time_by_hand():
    cfg = llama405b().cost_model.config
    # Llama 3 405B at 8,192 tokens, cp 4, tensor 8, micro-batch 1: a rank's K and V blocks are
    # 2 tensors × 2 bytes × (8192/4 tokens) × (8 kv heads × 128) / 8 ranks = 1,048,576 bytes
    cfg8k = cfg.with_(seq_len=8192)
    assert float(context.ring_step_bytes(cfg8k, 1, 8, 4)) == 1_048_576
    # over InfiniBand (50 GB/s, 2 µs) a step takes 2 µs + 1,048,576 / 50e9 s = 22.97152 µs; the rank's
    # attention forward of 40 µs is 4 blocks of 10 µs, so each of the 3 steps exposes 12.97152 µs; backward,
    # K, V, dK, dV (45.94304 µs) beside blocks of 100/4 = 25 µs expose 20.94304 µs each
    step = 2e-6 + 1_048_576 / 50e9
    fwd, bwd = context.ring_exposed(cfg8k, 1, 8, 4, 40e-6, 100e-6, 50e9, 2e-6)
    assert float(fwd) == pytest.approx(3 * (step - 10e-6)) and float(bwd) == pytest.approx(3 * (2 * step - 25e-6))
    # fully hidden when each block outlasts its step; nothing at cp = 1
    assert float(context.ring_exposed(cfg8k, 1, 8, 4, 1.0, 1.0, 50e9, 2e-6)[0]) == 0.0
    assert float(context.ring_exposed(cfg8k, 1, 8, 1, 0.0, 0.0, np.inf, 0.0)[1]) == 0.0


def test_cp_ring_links_follow_megatron_core_rank_order():
    # tp-cp-dp-pp: the cp ranks are t apart. t = 1, cp = 8: one node (NVLink 450 GB/s each way);
    # t = 8, cp = 4: ranks 8 apart, one per node (a ring step is one flow through one 400 Gb/s adapter);
    # the gradient group is the d·cp ranks t apart: t = 8, d = 2, cp = 4 -> 8 ranks 8 apart, one per node
    system = dgx_h100([GroupSpec(A100, 64)])  # the links only: any GPU
    links = plan_links(system, np.array([1, 8]), np.array([1, 2]), np.array([1, 1]), np.array([8, 4]))
    assert links["cp_bw"].tolist() == [450e9, 50e9]
    assert links["dp_bw"].tolist() == [450e9, 50e9]  # d·cp = 8 ranks: one node, then 8 nodes
    # cp = 1: the old three-size placement (a dp group of 8 ranks, t = 1, inside a node)
    assert plan_links(system, 1, 8, 1)["dp_bw"] == 450e9 and np.isinf(plan_links(system, 1, 8, 1)["cp_bw"])


def test_cp_plans_validity_and_the_long_sequence_they_make_feasible():
    m = llama405b(gpus=2048).cost_model
    # seq_len 131,072 = 2^17: cp up to max_context_parallel (32), every power of two divides s/2
    assert m.space.variables[[v.name for v in m.space.variables].index("context_parallel")].choices == \
        (1, 2, 4, 8, 16, 32)
    base = {"tensor_parallel": 8, "pipeline_parallel": 16, "data_parallel": 1, "microbatch_size": 1,
            "interleaving": 1, "recompute": "full", "sequence_parallel": True, "optimizer_sharding": True,
            "dp_overlap": True}
    # Llama Team 2024 Table 4 row 3 (long context): TP 8, CP 16, PP 16 -> 2,048 GPUs per replica
    one = m.evaluate(m.space.mapping({**base, "context_parallel": 1}))
    cp16 = m.evaluate(m.space.mapping({**base, "context_parallel": 16}))
    assert not one.feasible and "GiB per GPU" in one.reason and cp16.feasible
    # a rank holds s/cp tokens: the layer's stored bytes are those of a micro-batch of b/cp sequences
    t, cfg = 8, m.config
    assert float(memory.layer_activations(cfg, 1 / 16, t, True, memory.FULL)) == 2 * (131072 / 16) * 16384 / t
    # unfused attention cannot run ring attention, and cp must split s into 2·cp chunks
    unfused = llama405b(gpus=2048, attention="unfused").cost_model
    report = unfused.evaluate(unfused.space.mapping({**base, "context_parallel": 16}))
    assert not report.feasible and "fused attention" in report.reason
    odd = llama405b(seq_len=8190).cost_model
    assert odd.space.variables[[v.name for v in odd.space.variables].index("context_parallel")].choices == \
        (1, 3, 5, 7, 9, 13, 15, 21)


def test_cp_time_part_is_the_ring_of_every_layer_and_micro_batch():
    # 8,192 tokens over cp 16 (ranks 8 apart, one per node): 512 tokens per rank, whose attention
    # blocks are too short to hide the ring steps
    m = llama405b(gpus=2048, seq_len=8192).cost_model
    plan = {"tensor_parallel": 8, "pipeline_parallel": 16, "data_parallel": 1, "microbatch_size": 1,
            "interleaving": 1, "recompute": "none", "sequence_parallel": True, "optimizer_sharding": True,
            "dp_overlap": True, "context_parallel": 16}
    r = m.evaluate(m.space.mapping(plan))
    lt = timing.layer_compute(m.config, m.device, 1 / 16, 8, True)  # a rank: s/16 tokens of each sequence
    links = plan_links(m.system, 8, 1, 16, 16)
    assert links["cp_bw"] == 50e9
    fwd, bwd = context.ring_exposed(m.config, 1, 8, 16, lt.core, lt.core_backward, links["cp_bw"], links["cp_lat"])
    assert float(fwd) > 0 and float(bwd) > 0
    m_batches, busiest = 16, 8  # micro-batches per pipeline (batch 16, d 1, b 1); the middle stages' 8 layers
    part = {row["part"]: row["seconds"] for row in r.tables["time_breakdown"]}
    assert part["context-parallel ring"] == pytest.approx(m_batches * busiest * float(fwd + bwd))


def test_leaving_out_twin_dominated_cp_plans_keeps_the_optimum():
    # brute force over every valid plan of a small space, twins included: the engine's best is the minimum
    from optmap.run import solve
    from test_llm_model import problem

    p = problem(preset="megatron-22b", gpus=16, batch=16, max_microbatch=4, max_interleaving=2)
    m = p.cost_model
    rows = np.concatenate(list(m.space.grid()))
    plans = m.plan_arrays(m.values(rows))
    valid = ~np.logical_or.reduce(list(m.validity(plans).values()))
    cols = m.evaluate_batch(rows[valid])
    assert (m.values(rows[valid])["context_parallel"] > 1).any()
    for metric in ("time", "memory_gib"):
        single = type(p)(**{**p.__dict__, "objectives": (metric,), "senses": ("min",)})
        assert solve(single).values[metric] == pytest.approx(cols[metric][cols["feasible"]].min())


def test_million_token_sequences_reach_large_context_parallel_sizes():
    # the default bound: 32, or s / 8,192 ranks for sequences over 256K (2^20 tokens: 128)
    assert context.default_limit(8192) == 32 and context.default_limit(2**20) == 128
    assert context.choices(2**20, 1024)[-1] == 128 and context.choices(8192, 1024)[-1] == 32
    # Llama 3 8B on 1,048,576-token sequences over 1,024 H100s, tensor 4 × context 64 × data 4: each
    # rank holds 16,384 tokens, and the layout is a valid, feasible plan
    p = build_problem({"workload": {"model": "transformer", "preset": "llama3-8b", "seq_len": 2**20, "batch": 4,
                                    "dtype": "fp8"},
                       "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": 1024}]},
                       "cost": {"model": "megatron-3d"}})
    m = p.cost_model
    plan = {"tensor_parallel": 4, "pipeline_parallel": 1, "data_parallel": 4, "microbatch_size": 1,
            "interleaving": 1, "recompute": "none", "sequence_parallel": True, "optimizer_sharding": True,
            "dp_overlap": True, "context_parallel": 64}
    report = m.evaluate(m.space.mapping(plan))
    assert report.feasible, report.reason
