"""Flash attention (the default) against unfused attention, and the Llama 3 405B layout's memory by hand."""

import dataclasses

import pytest

from optmap.plugins.llm import attention, memory
from optmap.plugins.llm.compute import Device, Efficiency
from optmap.plugins.transformer.presets import GPT3_175B
from optmap.problem import build_problem
from optmap.run import solve

GIB = 2**30
# a roofline with no shape penalty, no launch cost and unlimited HBM: a GEMM takes FLOPs / peak
IDEAL = Device(1e15, 1e30, Efficiency(gemm=1.0, memory=1.0, half_dim=0.0, launch=0.0))


def test_flash_core_time_by_hand():
    # GPT-3 175B (s 2048, head_dim 128, 96 heads) on tensor 8, micro-batch 1: 12 heads per rank.
    # One product QKᵀ or PV: 2·s²·head_dim·heads = 2·2048²·128·12 = 12.885 GFLOP; flash forward: the two
    # products halved by the causal mask (FA-2 §3.1.1) = 12.885 GFLOP = 12.885 µs at 1 PFLOP/s;
    # backward: five products (FA-2 Algorithm 2) = 2.5 × the forward
    product = 2 * 2048**2 * 128 * 12 / 1e15
    fwd, bwd = attention.core_times(GPT3_175B, IDEAL, 1, 8, "flash")
    assert float(fwd) == pytest.approx(product) and float(bwd) == pytest.approx(2.5 * product)
    # unfused: both products in full (no causal skipping), backward twice, plus the s² softmax traffic
    fwd_u, bwd_u = attention.core_times(GPT3_175B, IDEAL, 1, 8, "unfused")
    assert float(fwd_u) == pytest.approx(2 * product) and float(bwd_u) == pytest.approx(4 * product)
    # an encoder (no causal mask) runs both products in full
    enc = GPT3_175B.with_(kind="encoder")
    assert float(attention.core_times(enc, IDEAL, 1, 8, "flash")[0]) == pytest.approx(2 * product)


def test_flash_memory_has_no_s_squared_term():
    # GPT-3 175B layer, tensor 8 with sequence parallelism, no recomputation: Korthikanti Eq. 4 gives
    # sbh/t·(34 + 5as/h) unfused; flash keeps the 34 sbh/t and, for the scores, the fp32 log-sum-exp of
    # each query row: 4·a·s·b/t bytes
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    unfused = memory.layer_activations(GPT3_175B, b, t, True, memory.NONE, attention="unfused")
    flash = memory.layer_activations(GPT3_175B, b, t, True, memory.NONE, attention="flash")
    assert float(unfused) == pytest.approx(s * b * h / t * (34 + 5 * a * s / h))
    assert float(flash) == pytest.approx(34 * s * b * h / t + 4 * a * s * b / t)
    # selective recomputation keeps neither
    assert float(memory.layer_activations(GPT3_175B, b, t, True, memory.SELECTIVE, attention="flash")) \
        == pytest.approx(34 * s * b * h / t)


def llama405b(gpus, batch=2048):
    return build_problem({
        "workload": {"model": "transformer", "preset": "llama3.1-405b", "batch": batch, "dtype": "bf16"},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": "h100-sxm", "count": gpus}]},
        "cost": {"model": "megatron-3d"}, "search": {"engine": "megatron-3d"}})


PUBLISHED = {"tensor_parallel": 8, "pipeline_parallel": 16, "context_parallel": 1, "data_parallel": 128,
             "microbatch_size": 1, "interleaving": 1, "sequence_parallel": True, "dp_overlap": True}


def test_llama3_405b_published_layout_memory_by_hand():
    # Llama Team 2024 Table 4: TP 8, CP 1, PP 16, DP 128 on 16,384 H100s, 8,192-token sequences, batch
    # 2,048; §3.3.2: no activation recomputation, FSDP over data parallelism
    m = llama405b(16384).cost_model
    r = m.evaluate(m.space.mapping({**PUBLISHED, "recompute": "none", "optimizer_sharding": False, "fsdp": True}))
    s, h, a, kv, ff, t = 8192, 16384, 128, 1024, 53248, 8
    # two norm inputs and outputs (Korthikanti); no dropout masks: Llama trains without dropout, and
    # PyTorch's dropout with p = 0 returns its input (the two masks would add 2 s·h)
    replicated = 8 * s * h
    sharded = 2 * s * (h + 2 * kv) + 2 * s * h + 2 * s * 2 * ff + 2 * s * ff  # Q K V, proj in, gate+up, down in
    layer = (replicated + sharded + 4 * a * s) / t  # + flash log-sum-exp; everything / t (sp)
    assert layer == 533_200_896
    # the fullest device is the second stage: 8 layers (the first holds 7 and the embedding), 15
    # micro-batches in flight under 1F1B (p - 1), and its own parameters
    activations = 8 * 15 * layer
    lp = m.config.layer_params / t
    static = 18 * 8 * lp / 128 + 2 * 2 * lp  # weights, fp32 grads, Adam all / d; two gathered layers
    assert r.metrics["memory_bytes"] == pytest.approx(activations + static, rel=1e-12)
    assert r.feasible and activations / GIB == pytest.approx(59.59, abs=0.01)
    # before issue 25 (unfused scores, without dropout the softmax output 2·a·s²·b/t = 2.1 GB per layer)
    # it needed hundreds of GiB
    unfused = llama405b(16384).cost_model
    assert memory.layer_terms(unfused.config, 1, attention="unfused")[2] / t == 2 * a * s * s / t


@pytest.mark.parametrize("gpus,data", [(16384, 128), (8192, 64)])
def test_llama3_405b_published_layouts_are_feasible(gpus, data):
    # the planner, with the published sizes pinned, finds a feasible plan (Table 4 rows 1 and 2)
    p = llama405b(gpus)
    pins = {k: v for k, v in PUBLISHED.items() if k not in ("interleaving", "sequence_parallel", "dp_overlap")}
    pins["data_parallel"] = data
    result = solve(dataclasses.replace(p, fixed=pins))
    assert result.report.feasible and result.report.metrics["memory_gib"] <= 78
    assert all(result.best.as_dict()[k] == v for k, v in pins.items())


def test_selective_recomputation_redoes_half_the_core_with_a_causal_flash_kernel():
    # hardware - model FLOPs = what recomputation runs again: the core's two products, 4·s²·inner per
    # sample and layer (Korthikanti §5), halved when the flash kernel skips the masked blocks
    from test_llm_model import problem

    B, s, layers, inner = 64, 2048, 96, 12288
    for attn, share in (("unfused", 1.0), ("flash", 0.5)):
        m = problem(attention=attn).cost_model
        plan = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 1, "microbatch_size": 1,
                "interleaving": 1, "recompute": "selective", "sequence_parallel": True,
                "optimizer_sharding": False, "dp_overlap": False}
        r = m.evaluate(m.space.mapping(plan)).metrics
        again = (r["hardware_tflops_per_gpu"] - r["model_tflops_per_gpu"]) * 1e12 * r["time"] * 64
        assert again == pytest.approx(share * B * layers * 4 * s * s * inner, rel=1e-9)


def test_measured_attention_rates_price_the_fused_kernel_by_hand():
    # GPT-3 175B on tensor 8 as above: 12.885 GFLOP forward; at 500 TFLOP/s forward 25.77 µs, and the
    # backward's 2.5 × 12.885 GFLOP at 400 TFLOP/s 80.53 µs, whatever the device's GEMM curve
    flops = 2 * 2048**2 * 128 * 12
    slow = Device(1e12, 1e9, Efficiency(gemm=0.1, memory=0.1, half_dim=1e6, launch=1.0))
    fwd, bwd = attention.core_times(GPT3_175B, slow, 1, 8, "flash", tflops=(500.0, 400.0))
    assert float(fwd) == pytest.approx(flops / 500e12) and float(bwd) == pytest.approx(2.5 * flops / 400e12)


def test_attention_tflops_option_changes_the_plan_time_and_refuses_unfused():
    from test_llm_model import problem

    plan = {"tensor_parallel": 8, "pipeline_parallel": 8, "data_parallel": 1, "microbatch_size": 1,
            "interleaving": 1, "recompute": "none", "sequence_parallel": True, "optimizer_sharding": False,
            "dp_overlap": False}
    base = problem(attention="flash").cost_model
    fast = problem(attention="flash", attention_tflops=[5000.0, 5000.0]).cost_model
    t0, t1 = (m.evaluate(m.space.mapping(plan)).metrics["time"] for m in (base, fast))
    # the core's share of GPT-3 175B at 2,048 tokens is small but not nothing: faster, by under a tenth
    assert 0.9 * t0 < t1 < t0
    with pytest.raises(Exception, match="attention_tflops prices a fused attention kernel"):
        problem(attention="unfused", attention_tflops=[500.0, 400.0])
