"""The attention of one layer as Megatron runs it: its core (scores, softmax, context), fused or not, and
its linear layers (:func:`linear_times`).

Option ``attention`` of the ``megatron-3d`` cost model:

* ``"flash"`` (default): fused attention as Megatron-Core runs it today (Transformer Engine's
  ``DotProductAttention`` with its FlashAttention-2 / cuDNN backends; Dao 2023, "FlashAttention-2",
  §3.1 and Algorithm 2). The scores never leave the chip: no ``s × s`` activations (the output and
  a log-sum-exp per query row are kept, :mod:`.memory`) and no ``s²`` softmax or dropout traffic.
  Forward: the two GEMM-sized products ``QKᵀ`` and ``PV``; with a causal mask the kernel skips the
  blocks above the diagonal, half the work (FA-2 §3.1.1 "Causal masking"). Backward: five
  products of the same sizes (FA-2 Algorithm 2 recomputes ``S = QKᵀ``, then ``dV = PᵀdO``,
  ``dP = dO Vᵀ``, ``dQ = dS K``, ``dK = dSᵀ Q``), so 5/2 of the forward.
* ``"unfused"``: Megatron-LM 2021-2022 (Narayanan et al. SC'21; Korthikanti et al. 2022): the two
  batched GEMMs, the scale-mask-softmax and the attention dropout as separate kernels whose
  ``s²`` tensors go through HBM; backward twice the GEMMs and the element-wise traffic. The
  published A100 runs of :mod:`.published` pin it.

Sliding-window layers (:mod:`optmap.workload.window`) run the same fused kernel over the band of
keys each query sees, ``w·s - w·(w-1)/2`` of the square (the kernel skips the blocks outside the
band as it skips those above the diagonal); the unfused kernels compute the whole square and mask
it. The average layer's share of the square is :func:`flash_share`.

The products are priced as the batched GEMMs of their shapes (``s × s × head_dim`` per head and
sample) on the compute model of :mod:`.compute`, so the GEMM shape curve applies to them alike. On
the fitted H100 that is about 300 TFLOP/s at head dimension 128, within 16 % of what
FlashAttention-2 runs on one H100 SXM (causal, 8K to 128K tokens); cuDNN's fused attention, which
Transformer Engine prefers on Hopper, ran 1.6 to 1.95 times FlashAttention-2's rate
(``examples/measure_attention.py``, ``docs/reproductions/data/h100-attention.json``; a check, not a fit). Cost option
``attention_tflops`` (forward, backward) prices the fused kernel at a rate the user measured
instead: its FLOPs (the products it computes, :func:`flash_flops`) over that rate; its default is
the rates an accelerator preset measured (``[attrs.kernels]``, ``optmap calibrate``; :func:`.compute.attention_rates`).
``b`` is the micro-batch (fractional for a context-parallel rank, which holds ``b/cp`` of the
queries against all the keys: the same work as ``b/cp`` whole sequences).
"""

from __future__ import annotations

import numpy as np
from optmap.workload import window
from optmap.workload.transformer import TransformerConfig

ATTENTION = ("flash", "unfused")
FLASH_BACKWARD_PRODUCTS = 5.0  # FA-2 Algorithm 2: S recomputed, dV, dP, dQ, dK
FORWARD_PRODUCTS = 2.0  # QKᵀ and PV


def core_times(cfg: TransformerConfig, dev, b, t, attention: str = "unfused",
               tflops: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of one layer's attention core on one tensor-parallel rank;
    ``tflops``: a fused kernel's measured forward and backward rates (TFLOP/s) instead of its GEMMs."""
    s, dq, dv = cfg.seq_len, cfg.q_head_dim, cfg.v_head_dim  # head_dim both, unless latent attention
    heads = np.asarray(b, float) * cfg.heads / np.asarray(t, float)
    if attention == "flash" and tflops is not None:
        flops = heads * flash_flops(cfg)
        return flops / (tflops[0] * 1e12), FLASH_BACKWARD_PRODUCTS / FORWARD_PRODUCTS * flops / (tflops[1] * 1e12)
    scores, context = dev.gemm_times(s, s, dq, batch=heads), dev.gemm_times(s, dv, s, batch=heads)  # QKᵀ, ·V
    if attention == "flash":
        forward = flash_share(cfg) * (scores[0] + context[0])
        return forward, forward * FLASH_BACKWARD_PRODUCTS / FORWARD_PRODUCTS
    dropout = cfg.dropout > 0  # scale-mask-softmax (4 bytes per score) + dropout (5), none when p = 0
    softmax_dropout = dev.memory_time((9.0 if dropout else 4.0) * heads * s * s, kernels=2 if dropout else 1)
    return scores[0] + context[0] + softmax_dropout, scores[1] + context[1] + 2.0 * softmax_dropout


def flash_share(cfg: TransformerConfig) -> float:
    """Share of the ``s × s`` square the fused kernel computes in the average layer: half with a
    causal mask (FA-2 §3.1.1: blocks above the diagonal are skipped), the causal band in a
    sliding-window layer (:func:`optmap.workload.window.causal_share`)."""
    full = 0.5 if cfg.causal else 1.0
    windowed = cfg.windowed_layers / cfg.layers
    return (1.0 - windowed) * full + windowed * window.causal_share(cfg.seq_len, cfg.sliding_window)


def flash_flops(cfg: TransformerConfig) -> float:
    """Forward FLOPs of the fused kernel per head and sample: ``QKᵀ`` and ``PV``, ``2·s²`` times the
    query and value widths, over the share of the square it computes (:func:`flash_share`)."""
    return flash_share(cfg) * 2.0 * cfg.seq_len**2 * (cfg.q_head_dim + cfg.v_head_dim)


def recomputed_core_flops(cfg: TransformerConfig, attention: str = "unfused") -> float:
    """FLOPs per sample and layer that selective recomputation runs again: the core's two
    products, ``4·s²·inner`` (Korthikanti §5; over the query and value widths per head with latent
    attention), the share a flash kernel computes of them (:func:`flash_share`)."""
    if attention == "flash":
        return cfg.heads * flash_flops(cfg)
    return 2.0 * cfg.seq_len**2 * cfg.heads * (cfg.q_head_dim + cfg.v_head_dim)


def linear_times(cfg: TransformerConfig, lin, tok, t, sp) -> tuple[tuple, tuple]:
    """(forward, backward) seconds of the attention's input linears and of its output projection
    on one tensor-parallel rank (``cfg.attention_linears()``): column-parallel ones over the heads,
    the row-parallel output over its input, and latent attention's duplicated down-projections on
    the rank's own tokens (``s/t`` with sequence parallelism, Megatron-Core's ``duplicated`` TELinear)."""
    inputs, output = (0.0, 0.0), (0.0, 0.0)
    for _, n_in, n_out, split in cfg.attention_linears():
        if split == "row":
            output = lin.gemm_times(tok, n_out, n_in / t)
            continue
        rows = tok / np.where(np.asarray(sp, bool), t, 1.0) if split == "duplicated" else tok
        f, b = lin.gemm_times(rows, n_out / t if split == "column" else n_out, n_in)
        inputs = (inputs[0] + f, inputs[1] + b)
    return inputs, output
