"""Megatron tensor parallelism over N devices: per-micro-batch compute and All-Reduce cost tables.

Builds the ``CostTables`` that ``schedule`` consumes (T_cp[l][K], T_cm[l][K] of Alg. 1 line 1).

Compute (note D5; the paper profiles T_cp on the GPU, we need an analytic stand-in that keeps
small micro-batches inefficient, otherwise K = 4 always wins, note §1.2):

    t_cp = launch_overhead + FLOPs_mb / (N · peak_flops · eff(tokens_mb))
    eff(m) = eff_max · m / (m + half_tokens)          # saturating GEMM efficiency in GEMM rows m

FLOPs split evenly over the N devices (heads and d_ff columns are split, rows are not), so
tokens_mb = (B/K)·S rows per device. On an accelerator with a measured calibration the cost
model passes :class:`~.measured.MeasuredCompute` instead, which prices each block's GEMMs and
attention by their shapes through :mod:`optmap.compute` (both satisfy :class:`BlockCompute`). With compression the quantise/dequantise/gather kernels are
charged to the compute stream (note D6): ``kernel_s_per_elem`` × dense elements of the message.

Communication (paper Eq. 3; note §1.1): one All-Reduce per block and direction, of the
[B/K, S, d_model] activation (forward, Megatron's g) or input gradient (backward, Megatron's f).
``allreduce_time(nbytes_array) -> seconds_array`` is a parameter: the ``acctfm`` cost model
(``model.py``) plugs in :func:`optmap.collectives.collective_time` on the problem's System;
``alpha_beta_allreduce`` is a local stand-in for tests and standalone use. With token top-k
the mask-computing (self-attention) block also All-Reduces ``An`` (B/K·S·4 bytes) as a separate
collective in the forward pass (note D6); backward reuses the mask, so no ``An``.

Serial extras (not pipelined, outside the DP chain, note D1): the output head and loss, and, when
``head_comm``, Megatron's vocabulary-parallel communication: one forward All-Reduce of
[B, S, d_model] per embedding lookup (VocabParallelEmbedding), three forward All-Reduces of
[B, S] fp32 in the parallel cross-entropy (max, predicted logit, sum of exponentials), and one
backward All-Reduce of [B, S, d_model] at the head input (the f operator). These stay
uncompressed.

Defaults follow the paper's testbed (§5.1: 4 × TITAN RTX, 10 Gbps Ethernet, recursive doubling).
α is not reported: 50 µs is an assumption (note §6.1 sketch). Calibration caveat: with these
physical defaults, TF8 at B = 128, S = 256 is far more communication-bound (Megatron idle ≈ 93 %)
than the paper's Fig. 6 (59 %); docs/reproductions/acctfm.md reports these honest numbers and,
clearly labelled, the bandwidth that would reproduce the paper's baseline idle rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Protocol

import numpy as np
from optmap.workload.transformer import TransformerConfig

from .compression import num_kept
from .schedule import PS, CostTables

AllReduceTime = Callable[[np.ndarray], np.ndarray]

TITAN_RTX_FP32_FLOPS = 16.3e12  # NVIDIA TITAN RTX peak FP32 (boost clock)
GBPS_10_BYTES_PER_S = 10e9 / 8  # 10 Gbps Ethernet = 1.25e9 B/s (β = 0.8 ns/B), paper §5.1


@dataclass(frozen=True)
class ComputeModel:
    """Per-device compute model (note D5)."""

    peak_flops: float = TITAN_RTX_FP32_FLOPS  # FLOP/s of one device (fp32, PyTorch 1.8 default)
    eff_max: float = 0.6  # large-GEMM efficiency (assumption)
    half_tokens: float = 256.0  # GEMM rows at which efficiency is eff_max / 2 (assumption)
    launch_overhead: float = 50e-6  # s per block per micro-batch: kernel launches, softmax, LN (assumption)

    def time(self, flops, tokens, n_devices: int) -> np.ndarray:
        """Seconds for one micro-batch of a block; ``flops`` whole-model, ``tokens`` GEMM rows."""
        tokens = np.asarray(tokens, float)
        eff = self.eff_max * tokens / (tokens + self.half_tokens)  # note D5: eff saturates with size
        return self.launch_overhead + np.asarray(flops, float) / (n_devices * self.peak_flops * eff)  # note D5

    def blocks(self, cfg: TransformerConfig, samples: np.ndarray, n_devices: int) -> tuple[np.ndarray, np.ndarray]:
        """Forward and backward seconds per micro-batch of every block, [L, P] (``samples`` [1, P])."""
        a = cfg.arrays()
        rows = a.tokens[:, None] * samples  # GEMM rows per micro-batch
        return (self.time(a.flops_fwd[:, None] * samples, rows, n_devices),
                self.time(a.flops_bwd[:, None] * samples, rows, n_devices))

    def head(self, cfg: TransformerConfig, batch: int, n_devices: int, backward: bool) -> tuple[float, float]:
        """Forward and backward seconds of the serial output head (0 without ``lm_head``)."""
        if not cfg.lm_head:
            return 0.0, 0.0
        hf = cfg.head_flops_fwd() * batch
        fwd = float(self.time(hf, batch * cfg.seq_len, n_devices))
        return fwd, float(self.time(cfg.bwd_factor * hf, batch * cfg.seq_len, n_devices)) if backward else 0.0


class BlockCompute(Protocol):
    """What the tables need from a compute model: :class:`ComputeModel` (the curve) or
    :class:`~.measured.MeasuredCompute` (the shared compute model on a measured accelerator)."""

    def blocks(self, cfg: TransformerConfig, samples: np.ndarray, n_devices: int) -> tuple[np.ndarray, np.ndarray]: ...

    def head(self, cfg: TransformerConfig, batch: int, n_devices: int, backward: bool) -> tuple[float, float]: ...


@dataclass(frozen=True)
class Compression:
    """Hybrid compression policy (§4.3); the defaults (keep 1, 32 bits) mean no compression."""

    keep_ratio: float = 1.0  # fraction of tokens kept (note §3.5: "X % sparsity" = X % kept)
    bits: int = 32  # total bits per kept element (piecewise: N = bits - 1 clusters + sign)
    scale_bytes: int = 4  # one fp32 max|R| per message per device (note D12)
    score_bytes: int = 4  # An element size (fp32)
    kernel_s_per_elem: float = 2e-11  # compute-stream cost per dense element (≈3 memory passes at 672 GB/s)
    rounding: Literal["ceil", "round", "floor"] = "ceil"  # k = ceil(keep·S) per sequence (note D13)


# ---- collectives (LOCAL DEFAULT: the host's system.py collectives replace this) ---------------------

def collective_coeffs(algorithm: str, n_devices: int) -> tuple[float, float]:
    """(c1, c2) of Eq. 3 for an All-Reduce over N devices (standard values, note §2.2)."""
    n = n_devices
    if n <= 1:
        return 0.0, 0.0
    lg = math.log2(n)
    if algorithm == "recursive_doubling":
        return lg, lg  # log2 N steps, the full message each step
    if algorithm == "ring":
        return 2.0 * (n - 1), 2.0 * (n - 1) / n
    if algorithm == "rabenseifner":
        return 2.0 * lg, 2.0 * (n - 1) / n
    raise ValueError(f"unknown All-Reduce algorithm {algorithm!r}; valid: recursive_doubling, ring, rabenseifner")


def alpha_beta_allreduce(n_devices: int = 4, alpha: float = 50e-6, bandwidth: float = GBPS_10_BYTES_PER_S,
                         algorithm: str = "recursive_doubling") -> AllReduceTime:
    """LOCAL DEFAULT All-Reduce time T(m) = α·c1 + β·c2·m (Eq. 3), β = 1/bandwidth; 0 bytes → 0 s."""
    c1, c2 = collective_coeffs(algorithm, n_devices)

    def allreduce_time(nbytes):
        m = np.asarray(nbytes, float)
        return np.where(m > 0, alpha * c1 + c2 * m / bandwidth, 0.0)  # Eq. 3

    return allreduce_time


# ---- cost tables --------------------------------------------------------------------------------------

def megatron_tables(cfg: TransformerConfig, batch: int, n_devices: int, allreduce_time: AllReduceTime, *,
                    compute: BlockCompute = ComputeModel(), compression: Compression = Compression(),
                    ks: tuple[int, ...] = PS, bytes_per_elem: int = 4, include_head: bool = True,
                    head_comm: bool = True, backward: bool = True) -> CostTables:
    """Per-micro-batch compute/comm tables [L, len(ks)] of ``cfg``'s block chain (Alg. 1 line 1).

    ``backward=False`` (inference) leaves every backward entry at zero, so the backward pass and
    its serial extras cost nothing and a schedule's backward columns are immaterial.
    """
    bad = [k for k in ks if batch % k]
    if bad:  # note D17: equal splits only, as in the paper (B = 128 or 64)
        raise ValueError(f"batch {batch} is not divisible by micro-batch counts {bad}")
    a = cfg.arrays()
    kk = np.asarray(ks, float)[None, :]
    b = batch / kk  # samples per micro-batch, [1, P]

    comp = compression
    quant = comp.bits < 8 * bytes_per_elem
    sparse = comp.keep_ratio < 1.0
    kept = num_kept(cfg.seq_len, comp.keep_ratio, comp.rounding) / cfg.seq_len if sparse else 1.0

    def data_bytes(msg):  # one data All-Reduce message per micro-batch, [L, P]
        dense = msg[:, None] * b
        n = dense * kept  # §4.3.1: only kept tokens' rows
        payload = np.ceil(n * comp.bits / 8) if quant else n * bytes_per_elem  # §4.3.2: bits per element
        return payload + (comp.scale_bytes if quant else 0), dense

    def ar(nbytes):  # the host's collective on a flat array; no message → no time
        x = np.asarray(nbytes, float)
        t = np.asarray(allreduce_time(x.ravel()), float).reshape(x.shape)
        return np.where(x > 0, t, 0.0)

    kern = comp.kernel_s_per_elem if (sparse or quant) else 0.0  # no kernels when nothing is compressed
    bf, dense_f = data_bytes(a.msg_fwd)
    bb, dense_b = data_bytes(a.msg_bwd)
    block_f, block_b = compute.blocks(cfg, b, n_devices)
    tcp_f = block_f + kern * dense_f
    tcp_b = block_b + kern * dense_b
    score = np.where(a.computes_mask[:, None] & sparse, cfg.seq_len * b * comp.score_bytes, 0.0)  # An, note D6
    tcm_f = ar(bf) + ar(score)  # Eq. 3 for the data and the An All-Reduce
    tcm_b = ar(bb)  # backward reuses the forward mask (§4.3.1)

    scp_f = scm_f = scp_b = scm_b = sbytes = 0.0
    if include_head:
        scp_f, scp_b = compute.head(cfg, batch, n_devices, backward)
    if include_head and head_comm:
        act = batch * cfg.seq_len * cfg.d_model * bytes_per_elem
        n_emb = 2 if cfg.kind == "encoder-decoder" else 1
        fwd_msgs = [act] * n_emb + ([batch * cfg.seq_len * 4] * 3 if cfg.lm_head else [])
        bwd_msgs = [act] if (cfg.lm_head and backward) else []
        scm_f = float(np.sum(ar(np.array(fwd_msgs, float))))
        scm_b = float(np.sum(ar(np.array(bwd_msgs, float))))
        sbytes = float(sum(fwd_msgs) + sum(bwd_msgs))

    if not backward:
        tcp_b, tcm_b, bb = (np.zeros_like(x) for x in (tcp_b, tcm_b, bb))
    return CostTables(ks=tuple(ks), tcp_fwd=tcp_f, tcm_fwd=tcm_f, tcp_bwd=tcp_b, tcm_bwd=tcm_b,
                      bytes_fwd=bf + score, bytes_bwd=bb, names=a.names,
                      serial_cp_fwd=scp_f, serial_cm_fwd=scm_f, serial_cp_bwd=scp_b, serial_cm_bwd=scm_b,
                      serial_bytes=sbytes)
