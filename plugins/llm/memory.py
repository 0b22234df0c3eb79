"""Memory per GPU: weights, gradients and optimizer state, and activations (Korthikanti et al. 2022).

Activations of one transformer layer and one micro-batch, in bytes (16-bit activations, 1-byte
dropout masks), written for any attention / MLP width so that grouped-query attention and gated
MLPs are covered; for a GPT layer (inner = kv = h, d_ff = 4h, no gate) they are exactly the
paper's formulas (tested):

    replicated = 10 sbh        two LayerNorm inputs and outputs (8 sbh) and two dropout masks (2 sbh)
    sharded    = 2sb(2·inner + 2·kv) + mlp     Q, K, V, projection input;  mlp = 2sb(d_ff_in + d_ff)
                                               (+ 2sb·d_ff for the gated product)  -> 24 sbh for GPT
    scores     = 5 a s² b      softmax output (2), its dropout mask (1) and dropout output (2)

Without dropout (``cfg.dropout`` 0, as today's LLMs train) no mask is stored and the attention keeps
only its softmax output (``2 a s² b``): PyTorch's ``dropout`` returns its input when ``p == 0``
(``aten/src/ATen/native/Dropout.cpp``, ``_dropout_impl``), which Megatron-Core's
``bias_dropout_add`` and its attention dropout call with the configured probability.

    none:       replicated/(t if sp) + sharded/t + scores/t   # Korthikanti Eq. 2 (t), Eq. 4 (t + sp)
    selective:  replicated/(t if sp) + sharded/t              # Korthikanti Eq. 6: sbh(10 + 24/t), 34 sbh/t
    full:       2 sbh/(t if sp)                               # Korthikanti §5: only the layer input
    moe:        none without a MoE layer's routed-expert part  # Megatron-Core --recompute-modules moe
    norm_act:   none without the separate LayerNorms' outputs and the experts' activation outputs
                # Megatron-Core --recompute-modules layernorm moe_act (MoE guide, fine-grained recomputation)
    mla_up_proj: none without latent attention's up-projected queries, keys and values
                # Megatron-Core --recompute-modules mla_up_proj (:mod:`.recompute`)

Fused (flash) attention, ``attention = "flash"`` (Dao 2023, FlashAttention-2 §3.1; TE's
``DotProductAttention`` as Megatron-Core runs it), never stores the ``s × s`` scores: the core keeps
its output (the projection input, counted above) and the fp32 log-sum-exp of each query row,
``4 a s b`` bytes, in place of ``scores``; selective recomputation drops that too. ``"unfused"``
is Megatron-LM 2021-2022 (the paper's ``5 a s² b``). With Megatron-Core's fused SwiGLU
(``bias_swiglu_impl``, ``megatron/core/fusions/fused_bias_swiglu.py``: ``save_for_backward(input)``)
a gated MLP stores its input (gate and up) and the product (the MLP-out input) only, not the
SiLU output as well (``fused_swiglu``; false: the unfused count above).

A pipeline's first stage holds the most (Korthikanti §4.2.3): ``L`` layers' worth for 1F1B
(``p`` micro-batches in flight of ``L/p`` layers; fewer when there are fewer micro-batches), and
``L·(1 + (p-1)/(p·v))`` with ``v`` interleaved stages. Its input-embedding dropout mask adds
``sbh·p`` (``/t`` with sp). With full recomputation one layer is rebuilt at a time, so its
``none`` activations are held once more (the working set). The last stage holds its ``L/p``
layers for one micro-batch and the logits: fp16 output and fp32 softmax, ``6 s b V / t``.

Weights, gradients and optimizer state (Megatron-LM ``docs/distrib_optimizer.md``, mixed precision
with 16-bit weights, fp32 gradients and Adam): 18 bytes per parameter, or ``6 + 12/d`` with the
distributed optimizer (ZeRO-1, state sharded over the ``d`` data-parallel ranks).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from optmap import schedule
from optmap.workload.transformer import TransformerConfig

NONE, SELECTIVE, FULL, MOE, NORM_ACT, MLA_UP_PROJ, MLA_UP_PROJ_MOE = 0, 1, 2, 3, 4, 5, 6
Recompute = Literal["none", "selective", "full", "moe", "norm_act", "mla_up_proj", "mla_up_proj_moe"]
RECOMPUTE = get_args(Recompute)  # the settings, by index
REDO_MOE, REDO_UP_PROJ = (MOE, MLA_UP_PROJ_MOE), (MLA_UP_PROJ, MLA_UP_PROJ_MOE)  # settings that re-run each module
REDO_EXCHANGE = (FULL, *REDO_MOE)  # settings that re-run a MoE layer's forward with its token exchange
# settings for mixture-of-experts / latent attention models (``mla_up_proj_moe`` needs both)
MOE_ONLY = tuple(RECOMPUTE[i] for i in (*REDO_MOE, NORM_ACT))
MLA_ONLY = tuple(RECOMPUTE[i] for i in REDO_UP_PROJ)

WEIGHT_BYTES, GRAD_BYTES, STATE_BYTES = 2.0, 4.0, 12.0  # 16-bit weight, fp32 grad, fp32 master + Adam m, v


def layer_terms(cfg: TransformerConfig, b, gemm_input_bytes: float = 2.0, attention: str = "unfused",
                fused_swiglu: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(replicated, sharded, scores) activation bytes of one layer for micro-batch ``b`` (above);
    ``gemm_input_bytes`` per element of the tensors saved as linear-layer inputs (the two
    LayerNorm outputs, the projection input and the MLP-out input: 1 with FP8, :mod:`.precision`);
    ``attention`` "unfused" (the scores, Korthikanti) or "flash" (the log-sum-exp in their place).
    ``b`` may be fractional: a context-parallel rank holds ``b/cp`` of the micro-batch's tokens."""
    b = np.asarray(b, dtype=float)
    s, h, a = cfg.seq_len, cfg.d_model, cfg.heads
    g = gemm_input_bytes
    # LayerNorm inputs, outputs (GEMM inputs), dropout masks; latent attention's compressed latents
    # (the up-projections' inputs, kept per rank's tokens as sequence parallelism splits them)
    latent = 0.0 if cfg.mla is None else g * s * b * (cfg.mla.q_lora_rank + cfg.mla.kv_lora_rank)
    masks = 2.0 if cfg.dropout > 0 else 0.0  # the two residual dropouts' 1-byte masks
    replicated = (4.0 + 2.0 * g + masks) * s * b * h + latent
    mlp = mlp_bytes(cfg, cfg.d_ff, s, g, b, fused_swiglu)
    if cfg.moe is not None:  # MoE layers: only shared experts are a tensor-parallel MLP (:mod:`.moe`)
        share = cfg.moe_layers / cfg.layers
        mlp = (1.0 - share) * mlp + share * mlp_bytes(cfg, cfg.moe.shared_width, s, g, b, fused_swiglu)
    q, k, v = cfg.qkv_widths
    sharded = 2.0 * s * b * (q + k + v) + g * s * b * cfg.heads * cfg.v_head_dim + mlp  # Q, K, V, projection input
    unfused = 5.0 if cfg.dropout > 0 else 2.0  # softmax output, and the attention dropout's mask and output
    scores = 4.0 * a * s * b if attention == "flash" else unfused * a * s * s * b  # FA-2 log-sum-exp; Korthikanti
    return replicated, sharded, scores


def mlp_bytes(cfg: TransformerConfig, width, s, g: float, b=1.0, fused_swiglu: bool = False):
    """Activation bytes of an MLP of ``width`` on ``s·b`` tokens: the MLP-in output (2 bytes, gate
    and up when gated), the MLP-out input (``g`` bytes) and the gated product (2 bytes; not kept
    by Megatron-Core's fused SwiGLU, which saves its input only)."""
    w_in = (2 if cfg.gated_mlp else 1) * width
    product = 2.0 * s * b * width if cfg.gated_mlp and not fused_swiglu else 0.0
    return 2.0 * s * b * w_in + g * s * b * width + product


def layer_activations(cfg: TransformerConfig, b, t, sp, recompute, gemm_input_bytes: float = 2.0,
                      attention: str = "unfused", fused_swiglu: bool = False, routed=0.0,
                      discarded: dict | None = None) -> np.ndarray:
    """Bytes one layer stores for one micro-batch (Korthikanti et al. 2022 Eqs. 2-6, above);
    ``routed``: what a MoE layer keeps for its routed experts per GPU (:func:`.moe.routed_activations`),
    which ``moe`` and ``mla_up_proj_moe`` recomputation (Megatron-Core ``--recompute-modules moe``: the MoE
    layer re-run from its input, the pre-MLP LayerNorm's output counted above, ``moe_layer.py``) do not keep;
    ``discarded``: what each fine-grained setting does not keep besides, by its index (:func:`.recompute.discarded`)."""
    t = np.asarray(t, dtype=float)
    rep_div = np.where(np.asarray(sp, bool), t, 1.0)
    rep, shard, scores = layer_terms(cfg, b, gemm_input_bytes, attention, fused_swiglu)
    none = rep / rep_div + shard / t + scores / t + routed
    selective = rep / rep_div + shard / t + routed
    full = 2.0 * cfg.seq_len * np.asarray(b, float) * cfg.d_model / rep_div
    rc = np.asarray(recompute)
    kept = none - np.where(np.isin(rc, REDO_MOE), routed, 0.0)
    fine = discarded or {}
    return np.select([rc == NONE, rc == SELECTIVE, rc == MOE, *(rc == k for k in fine)],
                     [none, selective, kept, *(kept - v for v in fine.values())], full)


def in_flight_micro_batches(p, v, m, stage=0) -> np.ndarray:
    """Micro-batches whose activations pipeline stage ``stage`` (0: the first) holds at once
    (Korthikanti §4.2.3): ``min(p - stage, m)`` under 1F1B, ``p·(1 + (p-1)/(p·v))`` interleaved
    for the first stage, at most the ``m`` of the iteration (:mod:`optmap.schedule`)."""
    p, v, m = (np.asarray(x, dtype=float) for x in (p, v, m))
    return np.where(v > 1, schedule.interleaved_in_flight(p, v, m, stage), schedule.in_flight(p, m, stage))


def in_flight_layers(layers: int, p, v, m) -> np.ndarray:
    """Layer-micro-batches of activations the first pipeline stage holds (Korthikanti §4.2.3): its
    ``L/p`` layers times the micro-batches it keeps in flight (:func:`in_flight_micro_batches`)."""
    return layers / np.asarray(p, dtype=float) * in_flight_micro_batches(p, v, m)


def fp32_gradient_copy(grad_bytes=GRAD_BYTES) -> np.ndarray:
    """Bytes per parameter of the fp32 copy of 16-bit main gradients the optimizer steps on (none when
    they are fp32). Megatron-Core's distributed optimizer makes it at the step
    (``distrib_optimizer.py``, ``copy_group_grads``: ``shard_model_grad.float()``) and frees it in
    ``zero_grad(set_to_none=True)`` before the next forward, so it never meets the activations."""
    return np.where(np.asarray(grad_bytes) < GRAD_BYTES, GRAD_BYTES, 0.0)


def static_bytes(params, sharded, d, grad_bytes=GRAD_BYTES) -> tuple[np.ndarray, ...]:
    """(weights, gradients, optimizer state, step-time gradient copy) bytes of ``params`` local
    parameters; the state and the copy are split over the ``d`` data-parallel ranks when ``sharded``
    (Megatron distributed optimizer). ``grad_bytes`` per main-gradient element (per plan: 4 fp32, 2 16-bit).
    Megatron-LM ``docs/distrib_optimizer.md``: 18 bytes per parameter with fp32 gradients (``6 + 12/d``
    distributed), 20 with fp16 ones (``4 + 16/d``) counting the fp32 copy, which lives only during the
    optimizer step (:func:`fp32_gradient_copy`): peak memory takes the larger of it and the activations."""
    params = np.asarray(params, dtype=float)
    split = np.where(np.asarray(sharded, bool), np.asarray(d, dtype=float), 1.0)
    return (WEIGHT_BYTES * params, grad_bytes * params, STATE_BYTES * params / split,
            fp32_gradient_copy(grad_bytes) * params / split)


def optimizer_bytes(grad_bytes) -> np.ndarray:
    """HBM bytes per parameter of Megatron-LM's mixed-precision optimizer step (its
    ``Float16OptimizerWithFloat16Params``): unscale the fp32 gradient (read + write, 8), its norm
    for clipping (read, 4), Adam (read weight, gradient, m, v; write weight, m, v: 28), copy the
    fp32 weight to the 16-bit one (read 4, write 2), zero the main gradient (``grad_bytes``) and,
    with 16-bit main gradients, first copy them to fp32 (read 2, write 4)."""
    grad_bytes = np.asarray(grad_bytes, float)
    return 8.0 + 4.0 + 28.0 + 6.0 + grad_bytes + np.where(grad_bytes < 4, 6.0, 0.0)
