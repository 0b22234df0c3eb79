"""NVIDIA's DGX Cloud benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking): measured step times.

Releases 25.03 to 25.05 print "Training step time (seconds per step)" for NeMo pre-training runs on
DGX H100 and GB200 NVL72. Later releases print layouts, and two of their READMEs show one run's output as
the example of reading a step time (``DGXC_EXAMPLES``): DeepSeek-V3 in BF16 on 1,024 H100s (25.08, NeMo
25.07.01) and Qwen3-235B-A22B in BF16 on 256 H100s (25.12, Megatron-Bridge on NeMo 25.11.01), each with
its job name (the layout) and its TFLOP/s, which agree with the model's FLOP count
(``test_llm_heldout_examples``). The rows here, each copied from the latest release that prints it:

* only models ``megatron-3d`` represents at full depth: GPT-3 175B, Llama 3.1 8B / 70B / 405B,
  Nemotron-4 15B / 340B, Grok-1 314B and DeepSeek-V3 (the "proxy" rows with fewer layers, Llama 4
  Maverick's interleaved MoE layers, Nemotron-H's Mamba layers, the fine-tuning and the JAX
  recipes are left out);
* of each published layout (model, system, precision, TP, PP, CP, EP, VP, micro-batch, batch per GPU),
  the smallest and the largest GPU count up to 1,024: the tables weak-scale one layout over up to
  nine GPU counts at one step time, which would weigh a model by how many counts its table prints;
* a row whose release does not pin one container is left out (Nemotron-4 340B on 128 H100s,
  25.03: its launch script picks NeMo 24.09 or 24.12).

The iteration time is the printed step time (``tokens_per_gpu`` = GBS × sequence / (step × GPUs)).
Where a table misprints its batch (GPT-3 175B, 25.04: "1204" at 512 GPUs; Grok-1 on 512 GB200s:
tokens/s of half the batch) the launch scripts' batch (2 × GPUs for Grok-1, the layout's
``MBS × DP × GA``) is kept. Each row's recipe, from the scripts its release pins:

* FP8 is delayed scaling (``bf16_with_fp8_mixed``; ``--fp8_recipe`` default ``ds``), the model's
  default;
* gradients are reduced and kept in bf16 (``grad_bytes = 2``) in every row but DeepSeek-V3's: NeMo's
  ``scripts/performance`` build each dense model's recipe with ``pretrain_recipe(performance_mode=True)``,
  whose ``pretrain_performance_optimizations`` sets ``plugins.grad_reduce_in_fp32 = False`` for either
  precision (``llama31_405b.py``, ``llama3_70b.py``, ``llama3_8b.py``, ``nemotron4_15b.py``,
  ``nemotron4_340b.py`` at d2b21556f2, 6f2c6fdaff and b4148d2169), and the strategy lets the precision
  plugin's setting override the DDP config's (``megatron_strategy.py``, ``update_config_with_dtype_overrides``);
  FP8 sets it again (``set_primary_perf_configs``). The NeMo-Launcher recipes of 24.12 say
  ``grad_sync_dtype: bf16``. DeepSeek-V3's script calls ``pretrain_recipe()`` without the performance
  mode (7a8f1cc7bc) and keeps the fp32 default;
* no FSDP (FSDP 0): the ``use_mcore_fsdp`` column of NeMo's ``model_configs_h100.csv`` is 0 for every
  pre-training row at those commits, and where ``model_configs_gb200.csv`` says 1 (Llama 3.1 405B and
  Nemotron-4 340B at b4148d2169) the releases' ``launch.sh`` passes ``-fsdp 0`` (``FSDP=${FSDP:-0}``); the
  NeMo-Launcher YAMLs say ``fsdp: false``;
* Grok-1 (``MixtralConfig8x7B`` widened: 64 layers, 6,144, 48 heads, 8 groups, 8 experts of 32,768,
  top 2, the Llama 3 tokenizer) runs the all-to-all dispatcher with capacity factor 1, padded
  (``MegatronTokenDropCallback``; the 24.12 YAML alike), gradients in bf16 for both precisions,
  and expert tensor parallelism 4 on GB200 and 1 on H100 in 25.05 (``launch.sh`` ``ET``, 25.05.01); the
  24.12 YAML also turns the userbuffers off and keeps 16-bit parameters beside the FP8 weights
  (``fp8_params: false``: ``fp8_param_gather = false``), and sets no expert tensor parallelism, so NeMo
  24.12 (NeMo 2.1.0: ``nlp_overrides.py`` calls ``initialize_model_parallel`` without it) runs Megatron-Core
  0.10's default, the tensor-parallel size 4 (``parallel_state.py``: "expert_tensor_parallel_size (int,
  default = tp_size)");
* DeepSeek-V3 (NeMo 25.04 ``pretrain_deepseek_v3.py``; ``launch.sh`` ``ETP=1``, and ``RM``, the recomputed
  modules under the script's selective granularity: ``mla_up_proj`` on H100, ``core_attn`` on GB200, every
  25.05 tag; ``recompute`` ``mla_up_proj`` and ``selective``): the all-to-all dispatcher with token drop,
  no userbuffers, and one multi-token prediction module: the script calls ``pretrain_recipe()``,
  whose ``use_mtp`` defaults to True (``recipes/deepseek_v3.py`` at 7a8f1cc7bc: ``mtp_num_layers=1``);
  the table's 61 layers are the main model's. Its stages hold ``64/PP - 1`` layers first and
  ``64/PP - 2`` last (the script's ``num_layers_in_first/last_pipeline_stage``), the split
  ``uneven_stages = "layout"`` gives for 61 layers with the embedding and the loss as one slot each;
* DeepSeek-V3 in 25.08 (NeMo ``pretrain_deepseek_v3.py`` at 9244b1ec89, ``launch.sh``): on H100 the flex
  dispatcher with DeepEP and forced load balancing (balanced routing, the model's default), bf16
  gradients (``pretrain_recipe(performance_mode=True)``), ETP 1 and ``RM="mla_up_proj mlp moe"``:
  ``recompute = "mla_up_proj_moe"`` (the three dense layers' MLP recomputation is not priced). Its
  explicit layout for PP 8 × VP 2 puts the embedding and 4 layers in the first chunk and 1 layer and
  the loss in the last, where ``layout`` gives 3 and 2: the last GPU, which also computes the logits,
  holds one layer more than it ran;
* Qwen3-235B-A22B in 25.12: Megatron-Bridge's ``qwen3_235b_a22b_h100_config`` at 15927667ed, so the rules of
  the Bridge rows (:data:`.heldout.ON_BRIDGE`): bf16 gradients, the all-to-all dispatcher, ETP 1, the expert
  all-to-all overlap and no tensor-parallel overlap.
"""

from __future__ import annotations

import dataclasses

from .heldout import BF16_GRADS, EXPERT_TP_1, FP32_GRADS, HeldOutRun, recomputing

_ALLTOALL = (("moe_dispatcher", "alltoall"),)


def _step(source: str, model: str, system: str, precision: str, gpus: int, gbs: int, mbs: int, seq: int, tp: int,
          pp: int, cp: int, vp: int | None, ep: int, seconds: float, recipe: tuple = ()) -> HeldOutRun:
    """A row from its printed step time (VP ``None`` where PP > 1 and the table prints "NA"); bf16
    gradients unless the row's recipe names its gradient bytes (module docstring)."""
    if not any(key == "grad_bytes" for key, _ in recipe):
        recipe = BF16_GRADS + recipe
    return HeldOutRun(source, model, system, precision, gpus, gbs, mbs, seq, tp, pp, cp, vp, ep, 0,
                      gbs * seq / (seconds * gpus), None, recipe=recipe)


def _strong(run: HeldOutRun) -> HeldOutRun:
    return dataclasses.replace(run, variant=f"GBS {run.gbs}")  # the strong-scaling table's rows


def _grok(source: str, system: str, precision: str, gpus: int, tp: int, pp: int, cp: int, vp: int, seconds: float,
          recipe: tuple = ()) -> HeldOutRun:
    return _step(source, "Grok1-314B", system, precision, gpus, 2 * gpus, 1, 8192, tp, pp, cp, vp, 8, seconds,
                 _ALLTOALL + recipe)


_DEEPSEEK = _ALLTOALL + (("tp_comm_overlap", False),) + FP32_GRADS + EXPERT_TP_1  # fp32 gradients: Megatron-Core's default

# 25.03 (NeMo 24.12 with NeMo-Launcher; llama3.1/README_405b.md)
DGXC_25_03 = [_step("dgxc-25.03", "LLAMA3.1-405B", "DGX-H100", p, 576, 252, 1, 8192, 8, 9, 2, 7, 1, t)
              for p, t in (("BF16", 17.5), ("FP8", 11.0))]

# 25.04 (NeMo 25.02.01 with NeMo's scripts/performance at d2b21556f2; GPT-3 175B and Grok-1 on NeMo 24.12's
# NeMo-Launcher, the latter from grok1/README_314b.md; the rest llama3.1/README.md, nemotron/README.md and
# nemo_megatron/README_175b.md)
DGXC_25_04 = [
    *(_step("dgxc-25.04", "LLAMA3.1-8B", "DGX-H100", p, g, 16 * g, 1, 8192, 1, 1, 2, 1, 1, t)
      for p, g, t in (("BF16", 8, 12.27), ("BF16", 128, 12.33), ("FP8", 8, 9.33), ("FP8", 128, 9.54))),
    *(_step("dgxc-25.04", "LLAMA3.1-70B", "DGX-H100", "BF16", g, 2 * g, 1, 8192, 4, 4, 2, 5, 1, t)
      for g, t in ((64, 14.66), (1024, 14.65))),
    *(_step("dgxc-25.04", "LLAMA3.1-70B", "DGX-H100", "FP8", g, 2 * g, 1, 8192, 4, 8, 1, 5, 1, t)
      for g, t in ((64, 9.86), (1024, 10.08))),
    *(_step("dgxc-25.04", "LLAMA3.1-405B", "DGX-H100", p, 1024, 512, 1, 8192, 8, 8, 2, 8, 1, t)
      for p, t in (("BF16", 19.84), ("FP8", 12.42))),
    *(_step("dgxc-25.04", "Nemotron4-15B", "DGX-H100", p, g, 4 * g, 2, 4096, 2, 1, 1, 1, 1, t)
      for p, g, t in (("BF16", 32, 2.66), ("BF16", 1024, 2.74), ("FP8", 32, 1.98), ("FP8", 1024, 2.03))),
    *(_step("dgxc-25.04", "Nemotron-340B", "DGX-H100", p, g, g // 4, 1, 4096, 8, 8, 1, None, 1, t)
      for p, g, t in (("BF16", 512, 4.39), ("BF16", 1024, 4.41), ("FP8", 512, 2.97), ("FP8", 1024, 3.0))),
    *(_step("dgxc-25.04", "GPT3-175B", "DGX-H100", p, g, 2 * g, 1, 2048, 4, 8, 1, 6, 1, t)
      for p, g, t in (("BF16", 128, 8.309), ("BF16", 1024, 8.453), ("FP8", 128, 5.626), ("FP8", 1024, 5.82))),
    *(_grok("dgxc-25.04", "DGX-H100", p, 1024, 4, 8, 2, 8, t, (("tp_comm_overlap", False), ("fp8_param_gather", False),
                                                              ("expert_tensor_parallel", 4)))
      for p, t in (("BF16", 21.2), ("FP8", 17.01))),
]

# 25.05 (NeMo 25.04.00 / 25.04.01 with NeMo's scripts/performance at 6f2c6fdaff, b4148d2169 and 7a8f1cc7bc;
# llama3.1/README.md, nemotron/README.md, grok1/README.md and deepseek_v3/pretraining/README.md)
DGXC_25_05 = [
    *(_step("dgxc-25.05", "LLAMA3.1-405B", "DGX-H100", p, 512, 256, 1, 8192, 8, 8, 2, 8, 1, t)
      for p, t in (("BF16", 19.81), ("FP8", 13.02))),
    *(_step("dgxc-25.05", "LLAMA3.1-405B", "DGX-GB200", p, g, g // 2, 1, 8192, 4, 8, 2, 8, 1, t)
      for p, g, t in (("BF16", 128, 9.347), ("BF16", 512, 9.508), ("FP8", 128, 6.131), ("FP8", 512, 6.244))),
    *(_step("dgxc-25.05", "Nemotron4-15B", "DGX-H100", p, 16, 64, 2, 4096, 2, 1, 1, 1, 1, t)
      for p, t in (("BF16", 2.746), ("FP8", 1.988))),
    *(_step("dgxc-25.05", "Nemotron-340B", "DGX-H100", p, 256, 64, 1, 4096, 8, 8, 1, 12, 1, t)
      for p, t in (("BF16", 4.606), ("FP8", 3.107))),
    *(_step("dgxc-25.05", "Nemotron-340B", "DGX-GB200", p, g, g // 4, 1, 4096, 8, 4, 1, 12, 1, t)
      for p, g, t in (("BF16", 128, 2.189), ("BF16", 512, 2.229), ("FP8", 128, 1.483), ("FP8", 512, 1.549))),
    *(_strong(_step("dgxc-25.05", "Nemotron-340B", "DGX-GB200", p, g, 512, 1, 4096, 8, 4, 1, 12, 1, t))
      for p, g, t in (("BF16", 128, 32.66), ("BF16", 512, 8.468), ("FP8", 128, 21.83), ("FP8", 512, 5.668))),
    *(_grok("dgxc-25.05", "DGX-H100", p, 512, 4, 8, 2, 8, t, EXPERT_TP_1) for p, t in (("BF16", 15.933), ("FP8", 13.433))),
    *(_grok("dgxc-25.05", "DGX-GB200", p, g, 4, 1, 1, 1, t, (("expert_tensor_parallel", 4),))
      for p, g, t in (("BF16", 128, 7.325), ("BF16", 512, 7.324), ("FP8", 128, 5.298), ("FP8", 512, 5.193))),
    *(_step("dgxc-25.05", "DeepSeekV3 (w/ MTP)", "DGX-H100", "BF16", g, 8 * g, 1, 4096, 2, pp, 1, 1, 64, t,
            _DEEPSEEK + recomputing("mla_up_proj")) for g, pp, t in ((512, 8, 48.948), (1024, 16, 52.04))),
    *(_step("dgxc-25.05", "DeepSeekV3 (w/ MTP)", "DGX-GB200", "BF16", g, 8 * g, 1, 4096, 2, 4, 1, 1, ep, t,
            _DEEPSEEK + recomputing("selective")) for g, ep, t in ((128, 32, 34.168), (256, 64, 34.194),
                                                                            (512, 64, 34.274))),
]


# 25.08 (NeMo 25.07.01 with NeMo's scripts/performance at 9244b1ec89; deepseek_v3/pretrain/README.md's worked
# example) and 25.12 (NeMo 25.11.01 with Megatron-Bridge's scripts/performance at 15927667ed;
# qwen3/pretrain/README.md's example output)
DGXC_EXAMPLES = [
    _step("dgxc-25.08", "DeepSeekV3 (w/ MTP)", "DGX-H100", "BF16", 1024, 8192, 1, 4096, 1, 8, 1, 2, 64, 36.189,
          (("moe_dispatcher", "deepep"),) + EXPERT_TP_1 + recomputing("mla_up_proj_moe")),
    _step("dgxc-25.12", "Qwen3-235B-A22B", "DGX-H100", "BF16", 256, 2048, 1, 4096, 2, 8, 1, 4, 32, 25.53227),
]


def runs() -> list[HeldOutRun]:
    """The dgxc-benchmarking rows, oldest release first."""
    return DGXC_25_03 + DGXC_25_04 + DGXC_25_05 + DGXC_EXAMPLES
