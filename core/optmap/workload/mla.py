"""Multi-head latent attention (DeepSeek-AI, "DeepSeek-V2", 2024, §2.1; "DeepSeek-V3", 2024, §2.1.1).

MLA replaces the Q, K and V projections of a transformer layer by low-rank ones:

* keys and values come from one compressed latent ``c_KV = W_DKV · h`` of width ``kv_lora_rank``
  (d_c): ``k_C = W_UK · c_KV`` and ``v_C = W_UV · c_KV`` per head (V2 Eqs. 9-11);
* queries from a compressed ``c_Q = W_DQ · h`` of width ``q_lora_rank`` (d'_c; 0 = projected from
  ``h`` directly, as DeepSeek-V2-Lite), up-projected per head (V2 Eqs. 12-13);
* rotary position embedding rides on extra ``rope_head_dim`` (d^R_h) dimensions: per head for the
  queries, one key shared by all heads from ``h`` (V2 Eqs. 14-17);
* each head attends over ``head_dim + rope_head_dim`` dimensions (queries · keys) and outputs
  ``v_head_dim`` (0: ``head_dim``); the output projection takes ``heads · v_head_dim``.

Training runs the up-projections explicitly (no weight absorption), so every projection is one
GEMM, as Megatron-Core's ``MLASelfAttention`` runs them: the down-projections are ``duplicated``
across tensor-parallel ranks (each computes its own tokens), the up-projections column-parallel
over heads and the output projection row-parallel (``multi_latent_attention.py``). The compressed
latents are RMS-normalised (``kv_lora_rank`` and ``q_lora_rank`` norm weights).

Counted as in :mod:`optmap.workload.transformer`: linear weights (no biases) and matrix-multiply
FLOPs (2 per multiply-accumulate), the attention products in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Split = Literal["duplicated", "column", "row"]  # how tensor parallelism splits a linear


@dataclass(frozen=True)
class MLAConfig:
    """The latent attention of a transformer (see the module docstring)."""

    kv_lora_rank: int  # d_c, the compressed key-value latent's width
    q_lora_rank: int = 0  # d'_c, the compressed query's width (0: queries from h directly)
    rope_head_dim: int = 64  # d^R_h, the rotary dimensions added to each query and to the shared key
    v_head_dim: int = 0  # value (and attention output) width per head; 0 = the model's head_dim

    def __post_init__(self):
        if self.kv_lora_rank < 1 or self.q_lora_rank < 0 or self.rope_head_dim < 0 or self.v_head_dim < 0:
            raise ValueError(f"mla: kv_lora_rank must be positive and q_lora_rank, rope_head_dim, v_head_dim "
                             f">= 0, got {self.kv_lora_rank}, {self.q_lora_rank}, {self.rope_head_dim}, "
                             f"{self.v_head_dim}")


def linears(mla: MLAConfig, d_model: int, heads: int, head_dim: int) -> list[tuple[str, int, int, Split]]:
    """(name, input width, output width, tensor-parallel split) of the attention's linears, in order."""
    qk, dv = head_dim + mla.rope_head_dim, mla.v_head_dim or head_dim
    if mla.q_lora_rank:
        query = [("q_down", d_model, mla.q_lora_rank, "duplicated"), ("q_up", mla.q_lora_rank, heads * qk, "column")]
    else:
        query = [("q", d_model, heads * qk, "column")]
    return query + [("kv_down", d_model, mla.kv_lora_rank + mla.rope_head_dim, "duplicated"),  # c_KV and the rope key
                    ("kv_up", mla.kv_lora_rank, heads * (head_dim + dv), "column"),  # k_C and v_C of every head
                    ("out", heads * dv, d_model, "row")]


def attention_params(mla: MLAConfig, d_model: int, heads: int, head_dim: int) -> int:
    """Weights of one MLA block: its linears and the two latent RMSNorms (V2 §2.1)."""
    norms = mla.kv_lora_rank + mla.q_lora_rank
    return sum(n_in * n_out for _, n_in, n_out, _ in linears(mla, d_model, heads, head_dim)) + norms


def attention_flops_fwd(mla: MLAConfig, seq: int, d_model: int, heads: int, head_dim: int) -> float:
    """Forward FLOPs of one MLA block on one sequence: its linears and the two attention products,
    queries · keys over ``head_dim + rope_head_dim`` and weights · values over ``v_head_dim``."""
    projections = 2.0 * seq * sum(n_in * n_out for _, n_in, n_out, _ in linears(mla, d_model, heads, head_dim))
    core = 2.0 * seq * seq * heads * (head_dim + mla.rope_head_dim + (mla.v_head_dim or head_dim))
    return projections + core
