"""Training precision recipes of ``megatron-3d``: which GEMMs run in 8 bits and what memory that adds.

``[workload] dtype`` names the recipe:

* ``bf16`` / ``fp16``: mixed precision (Micikevicius et al. 2018): 16-bit weights, activations
  and messages, fp32 master weights, gradients (bf16) and Adam state.
* ``fp8``: Transformer Engine's FP8 recipe as Megatron-Core runs it (``--fp8-format hybrid``;
  NVIDIA Transformer Engine documentation, "Using FP8 with Transformer Engine"; Micikevicius et
  al. 2022, "FP8 Formats for Deep Learning", §4): the linear layers of each transformer layer
  (QKV, projection, MLP in and out) multiply FP8 operands on the FP8 tensor cores; the attention
  core (TE's dot-product attention is 16-bit unless ``NVTE_FP8_DPA``), element-wise kernels, the
  embedding and the output layer (outside TE's ``fp8_autocast`` in Megatron-Core) stay 16-bit.
  Weights stay 16-bit with fp32 master weights and Adam state; TE caches each weight's FP8 copy
  and, for the backward's transposed GEMMs, its FP8 transpose (``Float8Tensor`` with its
  transpose cache): 2 more bytes per linear weight. A linear layer saves its FP8-cast input for
  the weight gradient (TE's ``Linear`` / ``LayerNormLinear`` save ``inputmat`` in FP8), so those
  activations take 1 byte per element instead of 2; activations that are not GEMM inputs and
  tensor-parallel messages stay 16-bit.
* ``mxfp8``: the same with MXFP8 blocks (OCP Microscaling Formats v1.0: 32 elements share one
  8-bit scale) on Blackwell, whose tensor cores take it natively; the weight copies carry their
  scales (1 byte per 32 elements, row-wise and column-wise copies: 2 + 2/32 bytes per weight).

The FP8 GEMM rate is the accelerator's FP8 datasheet peak times ``fp8_gemm_efficiency``; no FP8
GEMM is in ``shared/measurements`` (bf16 only), so by default it is the 16-bit GEMM efficiency of
the accelerator's calibration (a documented assumption, cost option ``fp8_gemm_efficiency``). A
check, not a fit (``examples/measure_fp8_gemms.py`` on one H100 SXM,
``docs/reproductions/data/h100-fp8-gemms.json``): FP8 ran 1.62-1.84 times as fast as bf16 on the
large linear layers (the default assumes 2; 8192³ reached 1,363 TFLOP/s, 0.69 of the FP8 peak
against bf16's 0.78), and 0.97-1.14 times on Qwen3-30B-A3B's expert GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    """What a precision recipe changes in the time and memory model."""

    name: str
    linear_dtype: str  # the dtype whose peak prices the transformer layers' linear GEMMs
    operand_bytes: float  # bytes per element a linear GEMM reads (its operands)
    gemm_input_bytes: float  # bytes per saved activation that is a linear layer's input
    weight_copy_bytes: float  # extra bytes per linear weight (low-precision copies kept)
    low_precision: bool  # the linear GEMMs run in 8 bits


RECIPES = {
    "bf16": Recipe("bf16", "bf16", 2.0, 2.0, 0.0, False),
    "fp16": Recipe("fp16", "fp16", 2.0, 2.0, 0.0, False),
    "fp8": Recipe("fp8", "fp8", 1.0, 1.0, 2.0, True),
    "mxfp8": Recipe("mxfp8", "mxfp8", 1.0 + 1.0 / 32.0, 1.0 + 1.0 / 32.0, 2.0 + 2.0 / 32.0, True),
}
ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


def recipe(dtype: str) -> Recipe | None:
    """The recipe of a workload dtype, or None when megatron-3d has none for it."""
    key = dtype.strip().lower()
    return RECIPES.get(ALIASES.get(key, key))


def kept_weight_bytes(rec: Recipe, fp8_param_gather: bool) -> float:
    """Extra bytes per linear weight beside its 16-bit copy. With ``fp8_param_gather`` (Megatron-Core
    ``--fp8-param-gather``, set by NeMo's and Megatron-Bridge's FP8 precision recipes) the FP8
    weight *is* the parameter (Transformer Engine's ``Float8Tensor``; fp32 master weights stay in the
    optimizer): its FP8 data and transpose (MXFP8: row- and column-wise copies with their scales)
    take the place of the 16-bit weight, so only what exceeds 2 bytes is extra."""
    if rec.low_precision and fp8_param_gather:
        return max(0.0, rec.weight_copy_bytes - 2.0)
    return rec.weight_copy_bytes


CAST_TRANSPOSE = 4.0  # bytes per element of a cast with its transpose: read 2 (16-bit), write 1 + 1 (FP8)
TRANSPOSE = 2.0  # bytes per element of the transpose of an FP8 tensor: read 1, write 1


def cast_bytes(cfg, tokens, t, dense_mlp: bool = True) -> tuple:
    """HBM bytes of one layer's FP8 casts per tensor-parallel rank and micro-batch, forward and
    backward (Transformer Engine ``Linear`` / ``LayerNormLinear``; Micikevicius et al. 2022 §4):
    forward, each linear layer's input is cast to FP8 with its transpose saved for the weight
    gradient (read 2, write 1 + 1 bytes per element), except the QKV and MLP-in inputs, which the
    fused LayerNorm already writes in FP8 (their transpose only: read 1, write 1); backward, each
    output gradient is cast and transposed (read 2, write 1 + 1). ``dense_mlp`` False leaves out the
    MLP (a MoE layer's experts, :mod:`.moe`). The attention's linears are ``cfg.attention_linears()``:
    those reading the normalised input share its transpose; the others cast their inputs (latent
    attention's up-projections read the compressed latents); split tensors count 1/t."""
    h = cfg.d_model
    forward, backward = TRANSPOSE * h, 0.0  # the normalised input, written in FP8: its transpose
    for _, n_in, n_out, split in cfg.attention_linears():
        if n_in != h or split == "row":  # the projection's input, latent attention's latents
            forward += CAST_TRANSPOSE * n_in / (t if split == "row" else 1.0)
        backward += CAST_TRANSPOSE * n_out / (1.0 if split == "row" else t)  # every output gradient
    if dense_mlp:
        forward += TRANSPOSE * h + CAST_TRANSPOSE * cfg.d_ff / t  # MLP-in input transpose; MLP-out input cast
        backward += CAST_TRANSPOSE * (cfg.mlp_in / t + h)
    return forward * tokens, backward * tokens


def expert_cast_bytes(copies, d_model: int, width_in, width_out) -> tuple:
    """HBM bytes of a MoE layer's FP8 casts of its routed copies (as :func:`cast_bytes`): forward,
    each copy's expert input and MLP-out input cast with their transposes (4 bytes per element);
    backward, the two expert GEMMs' output gradients cast and transposed (4 bytes per element)."""
    forward = CAST_TRANSPOSE * (d_model + width_out) * copies
    backward = CAST_TRANSPOSE * (width_in + d_model) * copies
    return forward, backward

