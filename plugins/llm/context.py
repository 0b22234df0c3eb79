"""Context parallelism (decision ``context_parallel``): ring attention as Megatron-Core and TE run it.

Each of the ``cp`` ranks of a context-parallel group holds ``s/cp`` tokens of every sequence of
the micro-batch, split in ``2·cp`` chunks so that causal attention costs every rank the same
(rank ``r`` takes chunks ``r`` and ``2·cp − 1 − r``; Megatron-Core ``get_batch_on_this_cp_rank``,
TE ``AttnFuncWithCPAndKVP2P``). Everything that is per token (the linear GEMMs, element-wise
kernels, tensor-parallel messages, stage transfers, activations) therefore shrinks as a
micro-batch of ``b/cp`` sequences would (:func:`tokens_per_rank`); the attention core of a rank
computes its queries against every key, the same work as ``b/cp`` whole sequences.

The keys and values travel around the ring (TE's ``cp_comm_type = "p2p"``, Megatron-Core's
default ``--cp-comm-type p2p``): ``cp − 1`` steps forward, each sending the rank's K and V blocks
(``2 · 2 bytes · b · s/cp · kv_heads·head_dim / t``) to the next rank while one block of attention
is computed; backward, ``cp − 1`` steps carry K, V and their gradients dK, dV (twice the bytes)
beside one block of the backward. Only what outlasts the block's compute is exposed
(:func:`ring_exposed`); recomputation (full or selective) repeats the forward ring. Sliding-window
layers are priced with the whole ring too (an upper bound: a window shorter than a chunk needs only
the neighbour's keys), against their smaller attention core.

Rank order is Megatron-Core's default ``tp-cp-ep-dp-pp``: the ``cp`` ranks of a group are ``t``
apart (:func:`.cluster.plan_links`); gradients are reduced over the ``dp·cp`` ranks that hold
the same weights (Megatron-Core's data-parallel group with context parallelism).
"""

from __future__ import annotations

import numpy as np
from optmap import collectives as coll
from optmap.workload.transformer import TransformerConfig

ACT_BYTES = 2.0  # 16-bit keys and values


def tokens_per_rank(b, cp) -> np.ndarray:
    """The micro-batch in sequences of work per rank: ``b/cp`` (each rank holds ``s/cp`` tokens)."""
    return np.asarray(b, float) / np.asarray(cp, float)


def ring_step_bytes(cfg: TransformerConfig, b, t, cp) -> np.ndarray:
    """Bytes one rank sends per forward ring step: its K and V blocks, ``2·2·b·(s/cp)·kv_inner/t``
    (the up-projected keys and values of every head with latent attention)."""
    return ACT_BYTES * np.asarray(b, float) * cfg.seq_len / np.asarray(cp, float) * sum(cfg.qkv_widths[1:]) \
        / np.asarray(t, float)


def ring_exposed(cfg: TransformerConfig, b, t, cp, core_forward, core_backward, bw, lat) -> tuple:
    """(forward, backward) exposed seconds of one layer's ring: ``cp − 1`` steps, each overlapped
    with one of the ``cp`` blocks of the rank's attention core (``core_*`` its whole time)."""
    cp = np.asarray(cp, float)
    step = coll.point_to_point(ring_step_bytes(cfg, b, t, cp), bw, lat)
    steps = np.maximum(cp - 1.0, 0.0)
    forward = steps * np.maximum(0.0, step - core_forward / cp)  # K, V beside one block forward
    backward = steps * np.maximum(0.0, 2.0 * step - core_backward / cp)  # K, V, dK, dV beside one block
    return np.where(cp > 1, forward, 0.0), np.where(cp > 1, backward, 0.0)


DEFAULT_LIMIT, TOKENS_PER_RANK = 32, 8192  # the default bound: 32, or s / 8,192 for longer sequences


def default_limit(seq_len: int) -> int:
    """The bound of ``context_parallel`` when ``max_context_parallel`` is not given: 32, or as many
    ranks as keep 8,192 tokens each for sequences over 256K (NeMo's long-sequence runs reach 1M
    tokens with context parallelism)."""
    return max(DEFAULT_LIMIT, seq_len // TOKENS_PER_RANK)


def choices(seq_len: int, gpus: int, limit: int | None = None) -> tuple[int, ...]:
    """Context-parallel sizes: ``seq_len`` divisible by ``2·cp`` (causal load balancing,
    Megatron-LM ``arguments.py``), up to the GPUs and ``limit`` (:func:`default_limit` if None)."""
    bound = min(gpus, default_limit(seq_len) if limit is None else limit)
    return tuple(c for c in range(1, bound + 1) if c == 1 or seq_len % (2 * c) == 0)
