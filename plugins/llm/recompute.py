"""Fine-grained recomputation: recompute settings ``norm_act`` (mixture-of-experts models) and
``mla_up_proj`` (latent attention).

Megatron-Core's ``--recompute-granularity selective --recompute-modules ...`` (its MoE guide,
"Fine-grained Recomputation": "``moe_act``: Recompute the GroupedMLP activation function.
``layernorm``: Recompute the input_layernorm and pre_mlp_layernorm (when they are not
``IdentityOp``). ``mla_up_proj``: Recompute the MLA up projection and RoPE applying parts").
``norm_act`` is ``layernorm moe_act``, which the MoE recipes of Megatron-Bridge (GPT-OSS) and of the
Megatron-MoE-ModelZoo (Qwen3-235B-A22B on H100) run; ``mla_up_proj`` alone, which DeepSeek-V3's run
on H100 and Blackwell (NVIDIA's dgxc-benchmarking 25.05 ``launch.sh``; Megatron-Bridge's DeepSeek-V3
configs). Each module is an output-discarding checkpoint (``CheckpointWithoutOutput``): the forward
frees the module's output once its consumers have saved what they need, and the backward runs the
module again from its kept input, one module at a time (no working set beyond one layer's output).

* **Which LayerNorms** (:func:`separate_norms`). Megatron-Core's Transformer Engine layer spec
  (``gpt_layer_specs.py``) fuses the input LayerNorm into the QKV GEMM (``IdentityOp``) except with
  latent attention, and the pre-MLP LayerNorm into the MLP-in GEMM except in a MoE layer, whose router
  and dispatcher take its output: so a MoE layer re-runs one LayerNorm, two with latent attention.
  Each output is the ``[s, b, h]`` tensor (``1/t`` with sequence parallelism), the GEMM-input bytes per
  element that :mod:`.memory` counts for it.
* **The activation**: every routed copy's activation output, the second expert GEMM's input (``d_ff``
  wide, :func:`.memory.mlp_bytes`, and the gated product where the SwiGLU is not fused), is freed; the
  first GEMM's output, the activation's input, stays.
* **The up-projections** (``multi_latent_attention.py``, ``qkv_up_proj_and_rope_apply``): the query's
  and the keys' and values' up-projection GEMMs (column-parallel) and the rotary embedding run again;
  their outputs, the per-head queries, keys and values the attention reads (16-bit, ``1/t`` of the heads),
  are freed; the compressed latents they come from stay.
* **Time** (:func:`redo_seconds`): those kernels' forward once more per micro-batch in the backward (the
  rotary embedding and the copies into whole tensors as one read and write of the queries, keys and
  values). No all-to-all is repeated, so Megatron-Core accepts either beside the all-to-all overlap
  (``transformer_config.py`` refuses only full and ``moe`` recomputation there).
"""

from __future__ import annotations

import numpy as np
from optmap.workload.transformer import TransformerConfig

from . import memory, moe

ACT_BYTES = 2.0  # LayerNorms, the rotary embedding and their outputs: 16-bit activations
# Megatron-Core's --recompute-modules of each setting that names modules (``selective`` keeps its default, core_attn)
MODULES = {"moe": "moe", "norm_act": "layernorm moe_act", "mla_up_proj": "mla_up_proj",
           "mla_up_proj_moe": "mla_up_proj moe"}


def choices(cfg: TransformerConfig, allowed) -> tuple[str, ...]:
    """The settings of ``allowed`` that act on ``cfg``, in :data:`.memory.RECOMPUTE` order: ``moe`` and
    ``norm_act`` need mixture-of-experts layers, ``mla_up_proj`` latent attention, ``mla_up_proj_moe`` both."""
    return tuple(r for r in memory.RECOMPUTE if r in allowed and (r not in memory.MOE_ONLY or cfg.moe is not None)
                 and (r not in memory.MLA_ONLY or cfg.mla is not None))


def separate_norms(cfg: TransformerConfig) -> float:
    """LayerNorm modules per layer, on average over the layers, that ``layernorm`` recomputation re-runs."""
    moe_share = 0.0 if cfg.moe is None else moe.moe_fraction(cfg)
    return (1.0 if cfg.mla is not None else 0.0) + moe_share


def discarded(cfg: TransformerConfig, b, t, sp, imbalance: float, gemm_input_bytes: float = 2.0,
              fused_swiglu: bool = False) -> dict[int, np.ndarray]:
    """Bytes of one layer and micro-batch (average layer) that each fine-grained setting does not keep,
    by its index in :data:`.memory.RECOMPUTE`: ``norm_act`` the separate LayerNorms' outputs and, in MoE
    layers, every routed copy's activation output; ``mla_up_proj`` the up-projected queries, keys and values,
    and so does ``mla_up_proj_moe`` beside the MoE layer's routed part (:func:`.memory.layer_activations`)."""
    tokens = moe.local_tokens(cfg, b, t, sp)  # b·s, 1/t of it with sequence parallelism
    norm_act = separate_norms(cfg) * gemm_input_bytes * tokens * cfg.d_model
    if cfg.moe is not None:
        width = cfg.moe.d_ff  # the second GEMM's input (1/etp as wide on etp times the copies: the same bytes)
        product = 2.0 * width if cfg.gated_mlp and not fused_swiglu else 0.0  # the unfused SwiGLU's saved product
        copies = tokens * cfg.moe.top_k * imbalance
        norm_act = norm_act + moe.moe_fraction(cfg) * copies * (gemm_input_bytes * width + product)
    up = _up_projected_bytes(cfg, b, t)
    return {memory.NORM_ACT: norm_act, memory.MLA_UP_PROJ: up, memory.MLA_UP_PROJ_MOE: up}


def up_projections(cfg: TransformerConfig) -> list[tuple[int, int]]:
    """(input, output) widths of latent attention's up-projections, the column-parallel linears that
    ``mla_up_proj`` re-runs (none without latent attention)."""
    if cfg.mla is None:
        return []
    return [(n_in, n_out) for _, n_in, n_out, split in cfg.attention_linears() if split == "column"]


def _up_projected_bytes(cfg: TransformerConfig, b, t) -> np.ndarray:
    """The queries, keys and values of one layer and micro-batch on a tensor-parallel rank (16-bit), as the
    attention reads them (0 without latent attention, where ``mla_up_proj`` does not apply)."""
    if cfg.mla is None:
        return np.zeros(())
    return ACT_BYTES * cfg.seq_len * np.asarray(b, float) * sum(cfg.qkv_widths) / np.asarray(t, float)


def redo_seconds(cfg: TransformerConfig, dev, lin, b, t, sp, act) -> tuple[np.ndarray, np.ndarray]:
    """Seconds ``norm_act`` and ``mla_up_proj`` recomputation add to one layer's backward: the separate
    LayerNorms' forward on ``dev`` and ``act``, the MoE layer's activation forward (``norm_act``); the
    up-projection GEMMs' forward on ``lin`` and one read and write of their outputs (``mla_up_proj``)."""
    norms = separate_norms(cfg)
    tensor = moe.local_tokens(cfg, b, t, sp) * cfg.d_model
    norm_act = dev.memory_time(norms * 2.0 * ACT_BYTES * tensor, kernels=norms) + act
    if cfg.mla is None:
        return norm_act, np.zeros(())
    tok = np.asarray(b, float) * cfg.seq_len  # the column-parallel linears run on the gathered sequence
    gemms = sum(lin.gemm_times(tok, n_out / np.asarray(t, float), n_in)[0] for n_in, n_out in up_projections(cfg))
    return norm_act, gemms + dev.memory_time(2.0 * _up_projected_bytes(cfg, b, t), kernels=1)
