"""FP8 / MXFP8 recipes of megatron-3d: linear GEMMs at the FP8 peak, memory of Transformer Engine's recipe."""

import pytest

from optmap.errors import OptmapError
from optmap.plugins.llm import memory, precision
from optmap.plugins.transformer.presets import GPT3_175B
from optmap.problem import build_problem


def problem(dtype="fp8", preset="llama3-70b", accelerator="h100-sxm", **cost):
    return build_problem({
        "workload": {"model": "transformer", "preset": preset, "batch": 64, "dtype": dtype},
        "system": {"topology": "dgx-h100", "groups": [{"accelerator": accelerator, "count": 64}]},
        "cost": {"model": "megatron-3d", **cost},
        "search": {"engine": "megatron-3d"}})


PLAN = {"tensor_parallel": 8, "pipeline_parallel": 4, "data_parallel": 2, "microbatch_size": 1, "interleaving": 1,
        "recompute": "selective", "sequence_parallel": True, "optimizer_sharding": True, "dp_overlap": True}


def test_fp8_activations_by_hand():
    # GPT layer (inner = kv = h, d_ff = 4h), t = 1: the saved linear-layer inputs take 1 byte:
    # replicated 4 (LN inputs) + 2 (LN outputs, FP8) + 2 (masks) = 8 sbh; sharded Q, K, V 6 sbh +
    # projection input 1 sbh + MLP-in output 8 sbh + MLP-out input 4 sbh = 19 sbh (bf16: 10 + 24)
    cfg, b = GPT3_175B, 1
    s, h, a = cfg.seq_len, cfg.d_model, cfg.heads
    sbh = s * b * h
    got = float(memory.layer_activations(cfg, b, 1, False, memory.NONE, gemm_input_bytes=1.0))
    assert got == pytest.approx(sbh * (27 + 5 * a * s / h))


def test_fp8_linear_gemms_run_at_the_fp8_peak_with_the_bf16_fraction():
    m = problem().cost_model
    lin, dev = m.linear_device, m.device
    assert lin.peak_flops == pytest.approx(1978.9e12) and lin.eff.gemm == dev.eff.gemm  # datasheet; default
    # a large compute-bound GEMM (8192³): the FP8 time is the bf16 time × 989.4 / 1978.9
    launch = dev.eff.launch
    ratio = (float(lin.gemm_time(8192, 8192, 8192)) - launch) / (float(dev.gemm_time(8192, 8192, 8192)) - launch)
    assert ratio == pytest.approx(989.4 / 1978.9)
    assert problem(fp8_gemm_efficiency=0.5).cost_model.linear_device.eff.gemm == 0.5


def test_fp8_memory_keeps_16_bit_weights_and_adds_fp8_copies():
    # without fp8_param_gather the recipe keeps a 16-bit weight beside TE's FP8 copies
    fp8, bf16 = problem(fp8_param_gather=False).cost_model, problem("bf16").cost_model
    r8, r16 = (m.evaluate(m.space.mapping(PLAN)) for m in (fp8, bf16))
    rows8 = {r["part"]: r["GiB"] for r in r8.tables["memory_per_gpu"]}
    rows16 = {r["part"]: r["GiB"] for r in r16.tables["memory_per_gpu"]}
    assert rows8["weights (16-bit)"] == pytest.approx(rows16["weights (16-bit)"])
    assert "FP8 weight copies" not in rows16
    # FP8 copy + FP8 transpose: 2 bytes per linear weight of the stage's 20 layers, over 8 ranks
    cfg = fp8.config
    assert rows8["FP8 weight copies"] == pytest.approx(2 * 20 * cfg.layer_params / 8 / 2**30)
    assert rows8["activations"] < rows16["activations"]
    # faster, but less than twice: attention core, element-wise kernels and messages stay 16-bit
    t8, t16 = r8.metrics["time"], r16.metrics["time"]
    assert t16 / 2 < t8 < t16


def test_refusals_are_one_line():
    with pytest.raises(OptmapError, match="mxfp8 peak"):
        problem("mxfp8")
    with pytest.raises(OptmapError, match="16-bit GEMMs only"):
        problem(compute="shared")
    with pytest.raises(OptmapError, match='not 16-bit: use "bf16"'):
        problem("fp32")


def test_fp8_param_gather_keeps_the_fp8_weights_as_parameters():
    # NeMo's / Megatron-Bridge's FP8 recipes (fp8_param_gather, the default): the FP8 weight and its
    # transpose (1 + 1 bytes) replace the 16-bit weight (2 bytes), so no copies row and the same
    # weights row as bf16; the memory saved is the 2 bytes per linear weight of the test above
    gathered, kept = (problem(fp8_param_gather=g).cost_model for g in (True, False))
    rg, rk = (m.evaluate(m.space.mapping(PLAN)) for m in (gathered, kept))
    rows = {r["part"]: r["GiB"] for r in rg.tables["memory_per_gpu"]}
    assert "FP8 weight copies" not in rows
    saved = rk.metrics["memory_gib"] - rg.metrics["memory_gib"]
    assert saved == pytest.approx(2 * 20 * gathered.config.layer_params / 8 / 2**30)
    assert "--fp8-param-gather" in gathered.export(PLAN, "megatron")[0]
    assert "--fp8-param-gather" not in kept.export(PLAN, "megatron")[0]


def test_fp8_casts_by_hand():
    # Transformer Engine's casts of one GPT-3 175B layer (h = 12288, d_ff = 4h, no GQA) on t = 8
    # ranks, per token: forward QKV input transpose 2h + projection input 4h/8 + MLP-in transpose 2h
    # + MLP-out input 4·4h/8 = 4h + 2.5h = 6.5h bytes; backward output gradients 4·(3h/8 + h + 4h/8
    # + h) = 4·2.875h = 11.5h bytes
    cfg, h = GPT3_175B, GPT3_175B.d_model
    forward, backward, k_f, k_b = precision.cast_bytes(cfg, 1.0, 8)
    assert forward == pytest.approx(6.5 * h) and backward == pytest.approx(11.5 * h) and (k_f, k_b) == (2, 4)
    # current scaling (TE Float8CurrentScalingQuantizer): the two normalised inputs are cast with their
    # transposes after the LayerNorm (4 bytes, not 2), every other cast reads its input once more for the
    # amax (6 bytes, not 4): forward 4·2h + 6·(h/8 + 4h/8) = 11.75h, backward 6·2.875h = 17.25h; kernels:
    # one scale per normalised input, an amax and a scale per other cast (2 forward, 4 backward)
    forward, backward, k_f, k_b = precision.cast_bytes(cfg, 1.0, 8, scaling="current")
    assert forward == pytest.approx(11.75 * h) and backward == pytest.approx(17.25 * h)
    assert (k_f, k_b) == (2 + 2 + 2 * 2, 4 + 2 * 4)
    # MXFP8: the LayerNorm writes 16 bits too (TE's UNFUSED norm), no amax: 4·2h + 4·(5h/8) = 10.5h
    forward, backward, k_f, k_b = precision.cast_bytes(cfg, 1.0, 8, scaling=precision.BLOCK)
    assert forward == pytest.approx(10.5 * h) and backward == pytest.approx(11.5 * h) and (k_f, k_b) == (4, 4)
    # a MoE layer's experts are left out: attention's only, 2h + 4h/8 and 4·(3h/8 + h)
    forward, backward, *_ = precision.cast_bytes(cfg, 1.0, 8, dense_mlp=False)
    assert forward == pytest.approx(2.5 * h) and backward == pytest.approx(5.5 * h)


def test_fp8_expert_casts_by_hand():
    # Qwen3-30B-A3B's experts (h = 2048, d_ff = 768, gated: MLP-in width 1536), 1,000 routed copies:
    # forward 4·(2048 + 768) bytes per copy, backward 4·(1536 + 2048)
    forward, backward, k_f, _ = precision.expert_cast_bytes(1000.0, 2048, 1536, 768, 16)
    assert forward == pytest.approx(1000 * 4 * 2816) and backward == pytest.approx(1000 * 4 * 3584)
    # Transformer Engine's split_quantize: one fused kernel per cast for all 16 experts with delayed
    # scaling, one per expert with MXFP8, three per expert (amax, scale, cast) with current scaling
    assert k_f == 2
    assert precision.expert_cast_bytes(1000.0, 2048, 1536, 768, 16, precision.BLOCK)[2] == 2 * 16
    forward, backward, k_f, _ = precision.expert_cast_bytes(1000.0, 2048, 1536, 768, 16, "current")
    assert forward == pytest.approx(1000 * 6 * 2816) and k_f == 2 * 3 * 16


def test_current_scaling_slows_the_casts_only_and_is_exported(tmp_path, capsys):
    from test_llm_moe import columns

    plan = {"tensor_parallel": 8, "pipeline_parallel": 1, "data_parallel": 8, "microbatch_size": 1,
            "interleaving": 1, "recompute": "full", "sequence_parallel": True, "optimizer_sharding": True,
            "dp_overlap": True, "context_parallel": 1, "expert_parallel": 1, "fsdp": False, "offload": "none",
            "grad_reduce_in_fp32": True, "expert_tensor_parallel": 1}
    delayed, current = (columns(problem(fp8_scaling=s).cost_model, plan) for s in ("delayed", "current"))
    assert current["forward_s"] > delayed["forward_s"] and current["backward_s"] > delayed["backward_s"]
    assert current["memory_gib"] == delayed["memory_gib"] and current["optimizer_s"] == delayed["optimizer_s"]
    with pytest.raises(OptmapError, match="applies to .* dtype = \"fp8\", not \"mxfp8\""):
        problem("mxfp8", accelerator="b200", fp8_scaling="current")
    # exported as Megatron-Core's per-tensor current scaling recipe
    from optmap.cli import main
    path, out = tmp_path / "p.toml", tmp_path / "r.json"
    path.write_text('[workload]\nmodel = "transformer"\npreset = "llama3-8b"\nbatch = 64\ndtype = "fp8"\n'
                    '[system]\ntopology = "dgx-h100"\n[[system.groups]]\naccelerator = "h100-sxm"\ncount = 8\n'
                    '[cost]\nmodel = "megatron-3d"\nfp8_scaling = "current"\n')
    assert main(["run", str(path), "--json", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", str(out), "--to", "megatron"]) == 0
    assert "--fp8-recipe tensorwise" in capsys.readouterr().out
