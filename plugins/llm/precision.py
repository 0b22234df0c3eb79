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
``docs/reproductions/data/h100-fp8-gemms.json``): FP8 ran 1.59-1.85 times as fast as bf16 on the
large linear layers (the default assumes 2; 8192³ reached 1,320 TFLOP/s, 0.67 of the FP8 peak
against bf16's 0.74), 1.30-1.55 times on Qwen3-235B-A22B's linear layers at TP 2 × EP 32, and
0.93-1.15 times on Qwen3-30B-A3B's expert GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass

from optmap.errors import OptmapError


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


def check_scaling(rec: Recipe, scaling: str) -> None:
    """Refuse, in one line, a scaling the recipe cannot have (MXFP8 scales blocks in its cast)."""
    if scaling not in SCALING:
        raise OptmapError(f"[cost] fp8_scaling must be one of {list(SCALING)}, got {scaling!r}")
    if scaling != "delayed" and rec.name != "fp8":
        raise OptmapError(f"[cost] fp8_scaling = \"{scaling}\" applies to [workload] dtype = \"fp8\", not "
                          f"\"{rec.name}\"; leave it out or use dtype = \"fp8\"")


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
AMAX_READ = 2.0  # current scaling reads each 16-bit cast input once more for its amax (TE compute_amax)
SCALING = ("delayed", "current")  # fp8 recipes' scaling: Megatron-Core --fp8-recipe delayed / tensorwise
BLOCK = "block"  # MXFP8's scaling: each cast kernel scales its own 32-element blocks


def scaling_of(rec: Recipe, fp8_scaling: str) -> str:
    """How ``rec``'s casts scale: ``fp8_scaling`` for FP8, :data:`BLOCK` for MXFP8."""
    return BLOCK if rec.name == "mxfp8" else fp8_scaling


def cast_bytes(cfg, tokens, t, dense_mlp: bool = True, scaling: str = "delayed") -> tuple:
    """HBM bytes and kernels of one layer's FP8 casts per tensor-parallel rank and micro-batch:
    (forward bytes, backward bytes, forward kernels, backward kernels) (Transformer Engine ``Linear``
    / ``LayerNormLinear``; Micikevicius et al. 2022 §4). Forward, each linear layer's input is cast
    to FP8 with its transpose saved for the weight gradient (read 2, write 1 + 1 bytes per
    element), except the QKV and MLP-in inputs, which the fused LayerNorm already writes in FP8
    (their transpose only: read 1, write 1); backward, each output gradient is cast and transposed
    (read 2, write 1 + 1). ``dense_mlp`` False leaves out the MLP (a MoE layer's experts,
    :mod:`.moe`). The attention's linears are ``cfg.attention_linears()``: those reading the
    normalised input share its transpose; the others cast their inputs (latent attention's
    up-projections read the compressed latents); split tensors count 1/t. ``scaling``: TE's
    ``layernorm_fwd`` writes FP8 itself only for delayed scaling (``Impl::FULLY_FUSED``); with
    ``current`` scaling it writes 16 bits with the amax (``FUSED_NORM_AMAX_FP8``) and with MXFP8
    (:data:`BLOCK`) 16 bits alone (``UNFUSED``), a cast with transpose following (one more kernel);
    and ``current`` scaling (``Float8CurrentScalingQuantizer.quantize_impl``) makes every other cast
    first read its input for the amax and compute the scale (``compute_amax``,
    ``compute_scale_from_amax``: two more kernels)."""
    h = cfg.d_model
    normed, forward, backward = 1, [], []  # normalised inputs; per-token widths of the other casts
    for _, n_in, n_out, split in cfg.attention_linears():
        if n_in != h or split == "row":  # the projection's input, latent attention's latents
            forward.append(n_in / (t if split == "row" else 1.0))
        backward.append(n_out / (1.0 if split == "row" else t))  # every output gradient
    if dense_mlp:  # the MLP-in input normalised; the MLP-out input cast; both output gradients
        normed += 1
        forward.append(cfg.d_ff / t)
        backward += [cfg.mlp_in / t, h]
    current, fused_norm = scaling == "current", scaling == "delayed"
    cast = CAST_TRANSPOSE + (AMAX_READ if current else 0.0)
    f_bytes = (TRANSPOSE if fused_norm else CAST_TRANSPOSE) * normed * h + cast * sum(forward)
    f_kernels = 2.0 + (0.0 if fused_norm else normed) + (2.0 * len(forward) if current else 0.0)
    b_kernels = 4.0 + (2.0 * len(backward) if current else 0.0)
    return f_bytes * tokens, cast * sum(backward) * tokens, f_kernels, b_kernels


def expert_cast_bytes(copies, d_model: int, width_in, width_out, local, scaling: str = "delayed") -> tuple:
    """HBM bytes and kernels of a MoE layer's FP8 casts of its routed copies on ``local`` experts (as
    :func:`cast_bytes`): forward, each copy's expert input and MLP-out input cast with their
    transposes (4 bytes per element); backward, the two expert GEMMs' output gradients cast and
    transposed. Transformer Engine's ``split_quantize`` (``multi_tensor_quantize_impl``) casts all
    the experts in one fused kernel with delayed scaling only; MXFP8 takes a kernel per expert and
    current scaling three (amax, scale, cast)."""
    cast = CAST_TRANSPOSE + (AMAX_READ if scaling == "current" else 0.0)
    per_cast = {"delayed": 1.0, BLOCK: local, "current": 3.0 * local}[scaling]
    return cast * (d_model + width_out) * copies, cast * (width_in + d_model) * copies, 2.0 * per_cast, 2.0 * per_cast


def gradient_choices(recipe: str, grad_bytes: float | None) -> tuple[bool, ...]:
    """Choices of ``grad_reduce_in_fp32``: the pinned ``grad_bytes`` (4: fp32, 2: 16-bit); else both
    for bf16 and FP8 recipes, fp32 first (Megatron-LM's default for ``--bf16``, ``arguments.py``; its
    ``--grad-reduce-in-bf16``, and NeMo's and Megatron-Bridge's performance recipes, reduce in bf16),
    and 16-bit only for fp16 (Megatron-LM's default there; fp32 is a numerics choice, ``grad_bytes = 4``)."""
    if grad_bytes is not None:
        return (grad_bytes > 2,)
    return (False,) if recipe == "fp16" else (True, False)
