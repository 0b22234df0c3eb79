"""Recompute setting ``norm_act`` (Megatron-Core ``--recompute-modules layernorm moe_act``): which
LayerNorms it re-runs, the bytes it frees and the seconds it adds, by hand on Mixtral 8x7B."""

import pytest

from optmap.plugins.llm import recompute
from optmap.plugins.transformer.presets import PRESETS

from test_llm_moe import columns, megatron_args, plan, problem


@pytest.mark.parametrize("preset, norms", [
    ("llama3-8b", 0.0),  # dense: both LayerNorms fused into the QKV and MLP-in GEMMs (gpt_layer_specs.py)
    ("mixtral-8x7b", 1.0),  # every layer MoE: its pre-MLP LayerNorm feeds the router, a module of its own
    ("deepseek-v3", 1.0 + 58 / 61),  # latent attention's input LayerNorm in all 61 layers, 58 of them MoE
])
def test_separate_layernorms_follow_megatron_cores_layer_spec(preset, norms):
    assert recompute.separate_norms(PRESETS[preset]) == pytest.approx(norms, rel=1e-12)


def test_norm_act_frees_the_norm_and_activation_outputs_and_reruns_them():
    m = problem().cost_model  # Mixtral 8x7B on 64 H100s, plan: t 1, p 4, d 16, b 1, ep 8, bf16
    none, light = columns(m, plan()), columns(m, plan(recompute="norm_act"))
    # per layer and micro-batch (s = 4,096, h = 4,096, 2 copies per token, d_ff 14,336, fused SwiGLU):
    # the pre-MLP LayerNorm's output, 2 B · 4,096 · 4,096, and each copy's activation output (the second
    # expert GEMM's input), 2 B · 14,336: 33,554,432 + 234,881,024 = 256 MiB
    per_layer = 2 * 4096 * 4096 + 4096 * 2 * 2 * 14336
    assert per_layer == 256 * 2**20
    in_flight = 4 * 8  # the first stage's 8 layers for its 4 micro-batches in flight (1F1B, p = 4)
    assert none["memory_activations"] - light["memory_activations"] == pytest.approx(in_flight * per_layer)
    # time: per micro-batch and layer the LayerNorm again (read and write 2 B · 4,096 · 4,096) and the
    # SwiGLU again (read gate and up, write the product: 2 · 2 B · 8,192 copies · 28,672), one kernel
    # each; 16 micro-batches (256 / 16) of 8 layers on the slowest stage; nothing else moves
    dev = m.device
    redo = dev.memory_time(2 * 2 * 4096 * 4096, kernels=1) + dev.memory_time(2 * 2 * 8192 * 28672, kernels=1)
    assert light["recompute_s"] == pytest.approx(16 * 8 * redo, rel=1e-9) and none["recompute_s"] == 0
    for part in ("forward_s", "backward_s", "ep_comm_s"):
        assert light[part] == pytest.approx(none[part], rel=1e-12)
    # no GEMM is repeated: the hardware FLOPs per iteration stay the model's
    flops = lambda c: c["hardware_tflops_per_gpu"] * c["time"]  # noqa: E731
    assert flops(light) == pytest.approx(flops(none), rel=1e-9)


def test_norm_act_is_a_choice_of_moe_models_only():
    choices = lambda model: next(v for v in model.space.variables if v.name == "recompute").choices  # noqa: E731
    assert "norm_act" in choices(problem().cost_model)
    assert "norm_act" not in choices(problem("llama3-8b", gpus=8, batch=8).cost_model)


def test_export_names_both_modules(tmp_path, capsys):
    out = megatron_args(tmp_path, capsys, "mixtral-8x7b", 64, 256,
                        fixes=("tensor_parallel=1", "pipeline_parallel=4", "data_parallel=16", "expert_parallel=8",
                               "microbatch_size=1", "interleaving=1", "recompute=norm_act"))
    assert "--recompute-granularity selective \\\n--recompute-modules layernorm moe_act \\" in out


def test_mla_up_proj_frees_the_up_projected_heads_and_reruns_their_gemms():
    """``recompute = "mla_up_proj"`` (``multi_latent_attention.py``, ``qkv_up_proj_and_rope_apply``) on
    DeepSeek-V3: 128 heads of queries and keys 192 wide (128 + 64 rotary) and values 128 wide."""
    m = problem("deepseek-v3", gpus=64, batch=128).cost_model
    given = dict(pipeline_parallel=1, data_parallel=64, expert_parallel=8)  # t 1, b 1: m = 128 / 64 = 2
    none, up = columns(m, plan(**given)), columns(m, plan(recompute="mla_up_proj", **given))
    # per layer and micro-batch: 2 B · 4,096 tokens · (24,576 + 24,576 + 16,384) = 512 MiB, over the
    # stage's 61 layers (the preset has no multi-token prediction module), one micro-batch in flight (p = 1)
    per_layer = 2 * 4096 * (128 * 192 * 2 + 128 * 128)
    assert per_layer == 512 * 2**20
    assert none["memory_activations"] - up["memory_activations"] == pytest.approx(61 * per_layer)
    # time: the query's up-projection (1,536 -> 24,576) and the keys' and values' (512 -> 32,768) forward
    # on 4,096 tokens again, and one read and write of the 512 MiB, per layer and micro-batch
    dev = m.device
    redo = (dev.gemm_times(4096, 24576, 1536)[0] + dev.gemm_times(4096, 32768, 512)[0]
            + dev.memory_time(2 * per_layer, kernels=1))
    assert up["recompute_s"] == pytest.approx(2 * 61 * redo, rel=1e-9) and none["recompute_s"] == 0
    # hardware FLOPs: 2 · 4,096 · (1,536 · 24,576 + 512 · 32,768) more per sample and layer (61 layers)
    flops = lambda c: c["hardware_tflops_per_gpu"] * c["time"] * 1e12 * 64  # noqa: E731
    assert flops(up) - flops(none) == pytest.approx(128 * 61 * 2 * 4096 * (1536 * 24576 + 512 * 32768), rel=1e-9)
    # a choice of latent-attention models only
    choices = lambda model: next(v for v in model.space.variables if v.name == "recompute").choices  # noqa: E731
    assert "mla_up_proj" in choices(m) and "mla_up_proj" not in choices(problem().cost_model)


def test_mla_up_proj_moe_frees_and_reruns_both_modules(tmp_path, capsys):
    """``recompute = "mla_up_proj_moe"``: ``--recompute-modules mla_up_proj moe`` (dgxc-benchmarking 25.08's
    DeepSeek-V3 H100 launch.sh, RM="mla_up_proj mlp moe"), two output-discarding checkpoints of disjoint
    tensors, so each part is what its own setting prices, summed."""
    m = problem("deepseek-v3", gpus=64, batch=128).cost_model
    given = dict(pipeline_parallel=1, data_parallel=64, expert_parallel=8)
    none, moe, up, both = (columns(m, plan(recompute=r, **given)) for r in ("none", "moe", "mla_up_proj",
                                                                           "mla_up_proj_moe"))
    # memory: the MoE layers' routed part as with moe, and the up-projected heads by hand (the test
    # above: 512 MiB per layer and micro-batch, 61 layers, one micro-batch in flight)
    freed = none["memory_activations"] - both["memory_activations"]
    assert freed - (none["memory_activations"] - moe["memory_activations"]) == pytest.approx(61 * 512 * 2**20)
    # time: both redos, and the MoE layers' all-to-alls once more (as moe); FLOPs: both re-run GEMM sets
    assert both["recompute_s"] == pytest.approx(moe["recompute_s"] + up["recompute_s"], rel=1e-12)
    assert both["ep_comm_s"] == pytest.approx(moe["ep_comm_s"], rel=1e-12) and both["ep_comm_s"] > none["ep_comm_s"]
    flops = lambda c: c["hardware_tflops_per_gpu"] * c["time"]  # noqa: E731
    assert flops(both) - flops(none) == pytest.approx(flops(moe) + flops(up) - 2 * flops(none), rel=1e-9)
    # a choice of models with both latent attention and MoE layers; exported as Megatron-Core's two modules
    choices = lambda model: next(v for v in model.space.variables if v.name == "recompute").choices  # noqa: E731
    assert "mla_up_proj_moe" in choices(m) and "mla_up_proj_moe" not in choices(problem().cost_model)
    out = megatron_args(tmp_path, capsys, "deepseek-v3", 1024, 8192,  # that run's layout, which fits with it
                        fixes=("tensor_parallel=1", "pipeline_parallel=8", "data_parallel=128", "expert_parallel=64",
                               "microbatch_size=1", "interleaving=2", "recompute=mla_up_proj_moe"))
    assert "--recompute-granularity selective \\\n--recompute-modules mla_up_proj moe \\" in out
