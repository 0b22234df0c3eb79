"""Tensor-parallel communication chunked beside its GEMMs: Transformer Engine's userbuffers, as
Megatron-Core's ``--tp-comm-overlap`` runs them with sequence parallelism (cost option
``tp_comm_overlap``).

Transformer Engine (``transformer_engine/pytorch/module/base.py``, ``initialize_ub`` defaults)
overlaps each forward collective with the GEMM it feeds or follows by splitting both into chunks
(Wang et al., "Overlap Communication with Dependent Computation via Decomposition", ASPLOS'23, §3):

* ``ring_exchange`` (QKV and MLP-in forward: the input's all-gather; projection and MLP-out input
  gradients: the output gradient's all-gather): ``t`` chunks, the GEMM run as ``t`` GEMMs of
  ``1/t`` of the tokens, each beside the next chunk's transfer;
* ``pipeline`` (projection and MLP-out forward: the output's reduce-scatter): the GEMM run as
  :data:`PIPELINE_SPLITS` GEMMs, each chunk's reduce-scatter beside the next GEMM, the last one
  after them all;
* ``bulk`` (the column-parallel layers' backward) runs a whole collective beside a whole GEMM, as
  Megatron's asynchronous collectives do (``tp_overlap``, :func:`.timing.tp_layer_comm`).

The chunked GEMMs are priced as the compute model prices GEMMs of that many tokens, so chunking
costs what it costs a thin GEMM; the streaming multiprocessors that ``pipeline`` and ``bulk``
reserve for communication (``num_sm`` 16) are not taken from the GEMMs (an assumption).
"""

from __future__ import annotations

import numpy as np
from optmap.workload.transformer import TransformerConfig

from . import moe

PIPELINE_SPLITS = 4.0  # Transformer Engine's num_splits for the pipelined reduce-scatters


def chunked(comm, gemm, chunks, trailing: bool = False) -> np.ndarray:
    """Exposed seconds of a collective of ``comm`` seconds split into ``chunks`` pipelined with the
    ``chunks`` pieces of a GEMM of ``gemm`` seconds: each step hides the shorter of a chunk's transfer
    and its GEMM; a reduce-scatter (``trailing``) also waits for its last chunk after the last GEMM."""
    comm, chunks = np.asarray(comm, float), np.asarray(chunks, float)
    steady = (chunks - 1.0) / chunks * np.maximum(0.0, comm - gemm)  # a two-stage pipeline
    return steady + (comm / chunks if trailing else 0.0)


def _split(lin, tokens, n, k, chunks) -> np.ndarray:
    """Seconds of a forward GEMM of ``tokens`` rows run as ``chunks`` GEMMs of ``tokens/chunks`` rows."""
    return chunks * lin.gemm_times(tokens / chunks, n, k)[0]


def _mlp_widths(cfg: TransformerConfig) -> list[tuple[float, float, float]]:
    """(share of layers, MLP-in width, MLP-out width) of the tensor-parallel MLPs: the dense layers'
    and, in MoE layers, their shared experts' (routed experts have no tensor-parallel collectives)."""
    if cfg.moe is None:
        return [(1.0, cfg.mlp_in, cfg.d_ff)]
    f, width = moe.moe_fraction(cfg), cfg.moe.shared_width
    shared = [(f, width * (2 if cfg.gated_mlp else 1), width)] if cfg.moe.shared_experts else []
    return [(1.0 - f, cfg.mlp_in, cfg.d_ff)] + shared


def exposed(cfg: TransformerConfig, lin, tokens, t, ag, rs) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) exposed seconds of one layer's chunked collectives and the extra GEMM
    time of chunking them, per tensor-parallel rank; ``ag`` / ``rs``: one whole all-gather /
    reduce-scatter of ``[b, s, h]``. The backward covers the row-parallel output gradients'
    all-gathers (the column-parallel ones are ``bulk``)."""
    h, t = cfg.d_model, np.asarray(t, float)
    # attention: QKV and projection (latent attention's gathers of its compressed latents are not
    # chunked: Transformer Engine's userbuffers name the qkv / proj pairs only)
    pairs = []
    if cfg.mla is None:  # the column-parallel QKV and the row-parallel projection
        (_, _, qkv_out, _), (_, proj_in, _, _) = cfg.attention_linears()
        pairs.append((1.0, qkv_out / t, proj_in / t))
    pairs += [(share, w_in / t, w_out / t) for share, w_in, w_out in _mlp_widths(cfg)]
    forward = backward = 0.0
    for share, n_in, k_out in pairs:  # column-parallel (h -> n_in), then row-parallel (k_out -> h)
        col, row = lin.gemm_times(tokens, n_in, h)[0], lin.gemm_times(tokens, h, k_out)[0]
        col_ring, row_ring = _split(lin, tokens, n_in, h, t), _split(lin, tokens, h, k_out, t)
        row_pipe = _split(lin, tokens, h, k_out, PIPELINE_SPLITS)
        forward = forward + share * (chunked(ag, col_ring, t) + col_ring - col
                                     + chunked(rs, row_pipe, PIPELINE_SPLITS, True) + row_pipe - row)
        backward = backward + share * (chunked(ag, row_ring, t) + row_ring - row)  # dgrad: the forward's shape
    return forward, backward
