"""Fine-grained recomputation of a mixture-of-experts layer: recompute setting ``norm_act``.

Megatron-Core's ``--recompute-granularity selective --recompute-modules layernorm moe_act`` (its MoE
guide, "Fine-grained Recomputation": "``moe_act``: Recompute the GroupedMLP activation function.
``layernorm``: Recompute the input_layernorm and pre_mlp_layernorm (when they are not
``IdentityOp``)"), which the MoE recipes of Megatron-Bridge (GPT-OSS on H100) and of the
Megatron-MoE-ModelZoo (Qwen3-235B-A22B on H100) run. Both modules use output-discarding checkpoints
(``CheckpointWithoutOutput``): the forward frees the module's output once its consumers have saved
what they need, and the backward runs the module again from its kept input, one module at a time
(no working set beyond one layer's output).

* **Which LayerNorms** (:func:`separate_norms`). Megatron-Core's Transformer Engine layer spec
  (``gpt_layer_specs.py``) fuses the input LayerNorm into the QKV GEMM (``IdentityOp``) except with
  latent attention, and the pre-MLP LayerNorm into the MLP-in GEMM except in a MoE layer, whose router
  and dispatcher take its output: so a MoE layer re-runs one LayerNorm, two with latent attention.
  Each output is the ``[s, b, h]`` tensor (``1/t`` with sequence parallelism), the GEMM-input bytes per
  element that :mod:`.memory` counts for it.
* **The activation** (:func:`discarded`): every routed copy's activation output, the second expert
  GEMM's input (``d_ff`` wide, :func:`.memory.mlp_bytes`, and the gated product where the SwiGLU is not
  fused), is freed; the first GEMM's output, the activation's input, stays.
* **Time** (:func:`redo_seconds`): the LayerNorms' forward (read and write the tensor, 16-bit) and the
  activation's forward (:attr:`.moe.MLPTimes.act`) once more per micro-batch in the backward. No GEMM
  and no all-to-all is repeated, so Megatron-Core accepts it beside the all-to-all overlap
  (``transformer_config.py`` refuses only full and ``moe`` recomputation there).
"""

from __future__ import annotations

import numpy as np
from optmap.workload.transformer import TransformerConfig

from . import moe

ACT_BYTES = 2.0  # a LayerNorm reads and writes 16-bit activations


def separate_norms(cfg: TransformerConfig) -> float:
    """LayerNorm modules per layer, on average over the layers, that ``layernorm`` recomputation re-runs."""
    moe_share = 0.0 if cfg.moe is None else moe.moe_fraction(cfg)
    return (1.0 if cfg.mla is not None else 0.0) + moe_share


def discarded(cfg: TransformerConfig, b, t, sp, imbalance: float, gemm_input_bytes: float = 2.0,
              fused_swiglu: bool = False) -> np.ndarray:
    """Bytes of one layer and micro-batch (average layer) that ``norm_act`` recomputation does not keep:
    the separate LayerNorms' outputs and, in MoE layers, every routed copy's activation output."""
    tokens = moe.local_tokens(cfg, b, t, sp)  # b·s, 1/t of it with sequence parallelism
    norms = separate_norms(cfg) * gemm_input_bytes * tokens * cfg.d_model
    if cfg.moe is None:
        return norms
    width = cfg.moe.d_ff  # the second GEMM's input (1/etp as wide on etp times the copies: the same bytes)
    product = 2.0 * width if cfg.gated_mlp and not fused_swiglu else 0.0  # the unfused SwiGLU's saved product
    copies = tokens * cfg.moe.top_k * imbalance
    return norms + moe.moe_fraction(cfg) * copies * (gemm_input_bytes * width + product)


def redo_seconds(cfg: TransformerConfig, dev, b, t, sp, act) -> np.ndarray:
    """Seconds ``norm_act`` recomputation adds to one layer's backward (average layer): the separate
    LayerNorms' forward on ``dev`` and ``act``, the MoE layer's activation forward (average layer)."""
    norms = separate_norms(cfg)
    tensor = moe.local_tokens(cfg, b, t, sp) * cfg.d_model
    return dev.memory_time(norms * 2.0 * ACT_BYTES * tensor, kernels=norms) + act
