"""dgxc-benchmarking's example runs on DGX H100 as held-out rows (optmap.plugins.llm.heldout_dgxc), and the
Megatron-Bridge rule that Qwen3-235B-A22B's H100 config turns the tensor-parallel overlap off."""

import pytest

from optmap.plugins.llm import heldout, heldout_runs


def _run(label: str) -> heldout.HeldOutRun:
    (run,) = [r for r in heldout_runs.runs() if r.label == label]
    return run


def test_deepseek_example_is_its_printed_step_time_layout_and_recipe():
    """deepseek_v3/pretrain/README.md at 25.08: "training step time = 36.189 s", 235.43 TFLOP/s per GPU, of
    pretrain_deepseek_v3_bf16_gpus1024_tp1_pp8_cp1_vp2_ep64_mbs1_gbs8192. Its TFLOP/s times its step is
    the 25.05 table's 163.7 TFLOP/s times 52.04 s on the same 1,024 GPUs and batch of 8,192 (one FLOP count,
    260.0 GFLOP per token), which checks the transcription. Recipe: launch.sh (H100: RM="mla_up_proj mlp moe",
    ETP=1) and NeMo's pretrain_deepseek_v3.py at 9244b1ec89 (H100: the flex dispatcher with DeepEP, forced
    load balancing; pretrain_recipe(performance_mode=True): bf16 gradients)."""
    run = _run("DeepSeekV3 (w/ MTP) BF16 1024 H100 (dgxc-25.08)")
    assert run.measured_s == pytest.approx(36.189)
    assert 235.43 * 36.189 == pytest.approx(163.7 * 52.04, rel=2e-4)
    assert 235.43e12 * 36.189 * 1024 / (8192 * 4096) == pytest.approx(260.0e9, rel=1e-3)
    assert (run.tp, run.pp, run.vp, run.ep, run.dp, run.mbs, run.gbs, run.group) == (1, 8, 2, 64, 128, 1, 8192,
                                                                                     "H100 MoE")
    assert heldout.recipe_options(run) == {"grad_bytes": 2, "moe_dispatcher": "deepep", "expert_tensor_parallel": 1,
                                           "recompute": ("mla_up_proj_moe",)}


def test_qwen3_example_is_its_printed_step_time_layout_and_recipe():
    """qwen3/pretrain/README.md at 25.12: 25,532.270 ms and 190.00 TFLOP/s per GPU of
    pretrain_qwen3_235b_a22b_bf16_gpus256_tp2_pp8_cp1_vp4_ep32_mbs1_gbs2048, the H100 table's layout (every
    other system runs TP 1). 190 TFLOP/s × 25.532 s × 256 GPUs / (2,048 × 4,096 tokens) = 148.0 GFLOP per
    token, Megatron's count for the model (148.035 GFLOP, test_llm_heldout), so the row is BF16 on H100.
    Recipe: Megatron-Bridge's qwen3_235b_a22b_h100_config at 15927667ed (the release's pin): the all-to-all
    dispatcher (no flex backend named), the expert all-to-all overlap, ETP 1, bf16 gradients, no TP overlap."""
    run = _run("Qwen3-235B-A22B BF16 256 H100 (dgxc-25.12)")
    assert run.measured_s == pytest.approx(25.53227)
    count = heldout_runs.megatron_flops_per_token(94, 4096, 64, 4, 128, 1536, 151936, 4096, top_k=8)
    assert 190.0e12 * 25.53227 * 256 / (2048 * 4096) == pytest.approx(count, rel=2e-3)
    assert (run.tp, run.pp, run.vp, run.ep, run.dp, run.gbs) == (2, 8, 4, 32, 16, 2048)
    assert heldout.recipe_options(run) == {"grad_bytes": 2, "moe_dispatcher": "alltoall", "expert_tensor_parallel": 1,
                                           "moe_a2a_overlap": True, "tp_comm_overlap": False}


def test_bridge_qwen3_235b_on_h100_runs_without_the_tensor_parallel_overlap():
    """Megatron-Bridge's Qwen3-235B-A22B H100 config passes CommOverlapConfig(tp_comm_overlap=False) at every
    commit read (c3e43e6aa, 15927667ed, 21d102f5e); every other Qwen3 config, and that model elsewhere, True."""
    for source in ("bridge-25.11", "bridge-26.02", "bridge-26.04.01"):
        (run,) = [r for r in heldout_runs.runs() if (r.source, r.model, r.system) == (source, "Qwen3-235B-A22B",
                                                                                     "DGX-H100")]
        assert heldout.recipe_options(run)["tp_comm_overlap"] is False
    assert "tp_comm_overlap" not in heldout.recipe_options(_run("Qwen3-30B-A3B FP8 16 H100 (bridge-26.02.01)"))
    gb200 = [r for r in heldout_runs.runs() if (r.source, r.model, r.system) == ("bridge-25.11", "Qwen3-235B-A22B",
                                                                                "DGX-GB200")]
    assert gb200 and all("tp_comm_overlap" not in heldout.recipe_options(r) for r in gb200)
