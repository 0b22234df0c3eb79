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
GEMM has been measured here (``shared/measurements`` holds bf16 only), so by default it is the
16-bit GEMM efficiency of the accelerator's calibration (a documented assumption, cost option
``fp8_gemm_efficiency``).
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
