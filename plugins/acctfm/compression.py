"""Hybrid communication compression of AccTFM §4.3 on real numpy tensors.

Token-level top-k sparsification (§4.3.1)
    Each simulated device holds attention probabilities of its local heads
    ``[B, heads_local, S_q, S_k]``. It aggregates them over its heads (``head_agg``, note D11) and
    sums every column (keys) → ``An [B, S_k]``. ``An`` is All-Reduced (summed over devices), so
    every device ranks the same global scores and gets the **same mask** without sending indices.
    Top-k is per sequence (note D8: k = ``num_kept(S, keep_ratio)`` tokens of every sample, giving
    a dense ``[B, k, h]`` buffer for a plain All-Reduce). Ties go to the earlier position (stable
    sort), identical on every device. Padding can be excluded explicitly (``valid``); pads then
    rank below every real token. Pruned tokens receive **zero** after the sparse All-Reduce (note
    D9 option a). The backward pass reuses the forward mask (§4.3.1, last sentences).

Quantisers
    * linear (Eq. 4–5): step = max|R| / (2^(bits-1) - 1), codes in ±(2^(bits-1) - 1);
    * piecewise (Eq. 6–12): N = bits - 1 clusters of equal width max|R|/N on each side, interval
      width U_k = U_0·2^k, U_0 = max|R| / (N·2^(N-1)); 2^(N+1) - 1 levels fit N + 1 bits
      (4 bits → 15 levels {0, ±1/12, ±1/6, ±1/4, ±1/3, ±1/2, ±2/3, ±1}·max, note §3.4).
    Eq. (9) is applied to |val| and the sign restored; k is clamped to N - 1 at |val| = max
    (note D13); ``np.round`` rounds half to even like ``torch.round``. The scale max|R| is one fp32
    per message per device (note D12 recommendation).

Quantised All-Reduce (note D12)
    ``"fake_quant"`` (default): each device quantises-dequantises its partial sum with its own
    scale, the fp32 values are summed (what "simulations" suggests). ``"recursive_doubling"``: at
    each of the log2 N steps both partners quantise their current partial and both add the two
    dequantised messages, so all devices stay bit-identical (the error grows with the steps).

Message accounting
    Compression ratio vs fp32 = (32 / bits)·(1 / keep_ratio) (note §3.5): 16× at (0.5, 4),
    13.33× at (0.6, 4). These paper numbers count the payload only; ``message_bytes`` also reports
    the overheads the ratio leaves out: the fp32 scale(s), the ``An`` All-Reduce (B·S fp32, a
    separate collective, forward of mask-computing blocks only) and index bytes (0 for token-level
    top-k, since the mask is agreed; ``index_bytes_per_token`` lets element/unaligned schemes be
    compared). Codes are bit-packed (ceil(n·bits/8) bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

Quantizer = Literal["piecewise", "linear", "none"]


# ---- token-level top-k ------------------------------------------------------------------------------

def num_kept(seq_len: int, keep_ratio: float, rounding: Literal["ceil", "round", "floor"] = "ceil") -> int:
    """Tokens kept per sequence, clamped to [1, seq_len] (note D13; ceil keeps at least keep_ratio)."""
    x = keep_ratio * seq_len
    k = {"ceil": math.ceil(x - 1e-9), "round": math.floor(x + 0.5), "floor": math.floor(x + 1e-9)}[rounding]
    return int(min(max(k, 1), seq_len))


def token_scores(attn_local: np.ndarray, head_agg: Literal["sum", "mean"] = "sum") -> np.ndarray:
    """Local ``An``: aggregate local heads, then sum each key column (§4.3.1). [B,h,Sq,Sk] → [B,Sk]."""
    a = attn_local.sum(axis=1) if head_agg == "sum" else attn_local.mean(axis=1)  # §4.3.1 step 1
    return a.sum(axis=1)  # §4.3.1: An[j] = Σ_i A[i, j]


def topk_mask(scores: np.ndarray, keep_ratio: float, valid: np.ndarray | None = None,
              rounding: Literal["ceil", "round", "floor"] = "ceil") -> np.ndarray:
    """Boolean [B, S] mask of the k = num_kept(S) highest-scoring tokens of every sequence.

    ``valid`` (bool [B, S]) marks real tokens; invalid (pad) tokens rank below every real token.
    Ties go to the earlier position. Deterministic, so identical inputs give identical masks.
    """
    s = np.asarray(scores, dtype=np.float64)
    if valid is not None:
        s = np.where(valid, s, -np.inf)
    b, n = s.shape
    k = num_kept(n, keep_ratio, rounding)
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]  # §4.3.1 top-k on the global An
    mask = np.zeros((b, n), dtype=bool)
    mask[np.arange(b)[:, None], order] = True
    return mask


def global_token_mask(attn_per_device: Sequence[np.ndarray], keep_ratio: float,
                      valid: np.ndarray | None = None, head_agg: Literal["sum", "mean"] = "sum",
                      rounding: Literal["ceil", "round", "floor"] = "ceil") -> np.ndarray:
    """All-Reduce the local ``An`` (sum over devices), then top-k: the mask every device computes."""
    an = np.sum([token_scores(a, head_agg) for a in attn_per_device], axis=0)  # All-Reduce(An)
    return topk_mask(an, keep_ratio, valid, rounding)


def gather_tokens(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Dense [B, k, h] buffer of the kept tokens (same k per sequence), in position order."""
    b, _, h = x.shape
    return x[mask].reshape(b, -1, h)


def scatter_tokens(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Inverse of ``gather_tokens``; pruned tokens get zero (note D9 option a)."""
    b, s = mask.shape
    out = np.zeros((b, s, values.shape[-1]), dtype=values.dtype)
    out[mask] = values.reshape(-1, values.shape[-1])
    return out


# ---- quantisers -------------------------------------------------------------------------------------

def piecewise_levels(bits: int) -> np.ndarray:
    """Sorted normalised levels (max|R| = 1) of the piecewise quantiser with ``bits`` total bits."""
    n = bits - 1  # N clusters + 1 sign bit (§4.3.2, last paragraph)
    u0 = 1.0 / (n * 2 ** (n - 1))  # Eq. 12
    pos = [0.0]
    for k in range(n):
        c, u = k / n, u0 * 2 ** k  # Eq. 7, Eq. 8
        pos += [c + j * u for j in range(1, 2 ** (n - 1 - k) + 1)]  # cluster k: 2^(N-1-k) intervals
    pos = np.array(pos)
    return np.concatenate([-pos[:0:-1], pos])


def linear_levels(bits: int) -> np.ndarray:
    """Sorted normalised levels of the linear quantiser (Eq. 4–5)."""
    q = 2 ** (bits - 1) - 1
    return np.arange(-q, q + 1) / q


def _scale(x: np.ndarray, scale: float | None) -> float:
    return float(np.max(np.abs(x))) if scale is None else float(scale)  # max|R|, one fp32 per message


def piecewise_encode(x: np.ndarray, bits: int, scale: float | None = None) -> tuple[np.ndarray, float]:
    """Signed integer codes in ±(2^N - 1), N = bits - 1, and the scale max|R| (Eq. 6–12)."""
    if bits < 2:
        raise ValueError("piecewise quantisation needs at least 2 bits (1 cluster + sign)")
    n = bits - 1
    m = _scale(x, scale)
    if m == 0.0:
        return np.zeros(np.shape(x), dtype=np.int32), 0.0
    v = np.minimum(np.abs(x) / m, 1.0)  # normalised |val|, values beyond a given scale saturate
    k = np.minimum(np.floor(v * n), n - 1)  # Eq. 9 on |val|, clamped to N-1 (note D13)
    u = 2.0 ** k / (n * 2 ** (n - 1))  # Eq. 8 + Eq. 12 (normalised U_k)
    j = np.round((v - k / n) / u)  # Eq. 6: intervals above C_k (Eq. 7)
    idx = (2 ** n - 2 ** (n - k)) + j  # levels below cluster k: Σ_{i<k} 2^(N-1-i)
    return (np.sign(x) * idx).astype(np.int32), m


def piecewise_decode(codes: np.ndarray, scale: float, bits: int) -> np.ndarray:
    pos = piecewise_levels(bits)[2 ** (bits - 1) - 1:]  # non-negative levels, index = |code|
    return np.sign(codes) * pos[np.abs(codes)] * scale


def linear_encode(x: np.ndarray, bits: int, scale: float | None = None) -> tuple[np.ndarray, float]:
    q = 2 ** (bits - 1) - 1
    m = _scale(x, scale)
    if m == 0.0:
        return np.zeros(np.shape(x), dtype=np.int32), 0.0
    step = m / q  # Eq. 4
    return np.clip(np.round(x / step), -q, q).astype(np.int32), m  # Eq. 5 (codes)


def linear_decode(codes: np.ndarray, scale: float, bits: int) -> np.ndarray:
    return codes * (scale / (2 ** (bits - 1) - 1))  # Eq. 5


def quantize(x: np.ndarray, bits: int, method: Quantizer = "piecewise", scale: float | None = None) -> np.ndarray:
    """Quantise-dequantise ``x`` (fake quantisation); ``method="none"`` or bits >= 32 is identity."""
    x = np.asarray(x, dtype=np.float64)
    if method == "none" or bits >= 32:
        return x.copy()
    enc, dec = (piecewise_encode, piecewise_decode) if method == "piecewise" else (linear_encode, linear_decode)
    codes, m = enc(x, bits, scale)
    return dec(codes, m, bits)


def quant_mse(x: np.ndarray, bits: int, method: Quantizer = "piecewise") -> float:
    """Mean squared quantisation error (the paper's criterion, §4.3.2)."""
    return float(np.mean((quantize(x, bits, method) - x) ** 2))


# ---- compressed All-Reduce (simulated devices) -----------------------------------------------------

def compressed_allreduce(partials: Sequence[np.ndarray], mask: np.ndarray | None, bits: int = 32,
                         method: Quantizer = "piecewise",
                         mode: Literal["fake_quant", "recursive_doubling"] = "fake_quant") -> list[np.ndarray]:
    """All-Reduce of per-device partial sums [B, S, h] through token mask + quantiser; one result per device.

    ``mask=None`` keeps every token. Pruned tokens come out as zero (note D9 a).
    """
    n = len(partials)
    sparse = [p if mask is None else gather_tokens(p, mask) for p in partials]  # §4.3.1 dense [B,k,h]
    if mode == "fake_quant":
        total = np.sum([quantize(s, bits, method) for s in sparse], axis=0)  # note D12 (c)
        cur = [total] * n
    else:
        if n & (n - 1):
            raise ValueError("recursive doubling needs a power-of-two device count")
        cur = [np.asarray(s, dtype=np.float64) for s in sparse]
        step = 1
        while step < n:  # note D12 (a): log2 N exchange steps, both partners requantise
            q = [quantize(c, bits, method) for c in cur]
            cur = [q[i] + q[i ^ step] for i in range(n)]
            step *= 2
    return [c if mask is None else scatter_tokens(c, mask) for c in cur]


@dataclass
class HybridCompressor:
    """Per-layer compressor: forward builds and stores the token mask, backward reuses it (§4.3.1)."""

    keep_ratio: float = 1.0
    bits: int = 32
    method: Quantizer = "piecewise"
    mode: Literal["fake_quant", "recursive_doubling"] = "fake_quant"
    head_agg: Literal["sum", "mean"] = "sum"
    rounding: Literal["ceil", "round", "floor"] = "ceil"
    mask: np.ndarray | None = None

    def forward(self, partials: Sequence[np.ndarray], attn_per_device: Sequence[np.ndarray],
                valid: np.ndarray | None = None) -> list[np.ndarray]:
        if self.keep_ratio < 1.0:
            self.mask = global_token_mask(attn_per_device, self.keep_ratio, valid, self.head_agg, self.rounding)
        else:
            self.mask = None
        return compressed_allreduce(partials, self.mask, self.bits, self.method, self.mode)

    def backward(self, grad_partials: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Loss-tensor All-Reduce with the forward mask, no score recomputation (§4.3.1)."""
        return compressed_allreduce(grad_partials, self.mask, self.bits, self.method, self.mode)


# ---- message accounting ----------------------------------------------------------------------------

@dataclass(frozen=True)
class MessageBytes:
    """Bytes of one compressed All-Reduce message (per device contribution, the m of Eq. 3)."""

    payload: int  # bit-packed codes (or fp32 values) of the kept tokens
    scale: int  # quantiser scale(s)
    index: int  # token indices (0 for agreed token-level masks)
    scores: int  # the An All-Reduce, a separate collective (forward, mask-computing blocks only)
    dense_fp32: int  # the uncompressed fp32 message, for the ratio

    @property
    def message(self) -> int:
        """Bytes of the main (data) All-Reduce message."""
        return self.payload + self.scale + self.index

    @property
    def total(self) -> int:
        return self.message + self.scores

    @property
    def ratio(self) -> float:
        """dense fp32 / total bytes including every overhead."""
        return self.dense_fp32 / self.total


def message_bytes(batch: int, seq_len: int, hidden: int, keep_ratio: float = 1.0, bits: int = 32, *,
                  with_scores: bool = True, scale_bytes: int = 4, scales_per_message: int = 1,
                  score_bytes: int = 4, index_bytes_per_token: int = 0, value_bytes: int = 4,
                  rounding: Literal["ceil", "round", "floor"] = "ceil") -> MessageBytes:
    """Byte accounting of one [batch, seq_len, hidden] All-Reduce message after compression.

    ``with_scores``: whether this message's mask is computed here (self-attention block, forward);
    the An traffic is B·S·score_bytes (§4.3.1). Scales/scores/indices vanish when unused.
    """
    sparse = keep_ratio < 1.0
    quant = bits < 8 * value_bytes
    k = num_kept(seq_len, keep_ratio, rounding) if sparse else seq_len
    n = batch * k * hidden
    payload = math.ceil(n * bits / 8) if quant else n * value_bytes
    return MessageBytes(
        payload=payload,
        scale=scale_bytes * scales_per_message if quant else 0,
        index=index_bytes_per_token * batch * k if sparse else 0,
        scores=score_bytes * batch * seq_len if (sparse and with_scores) else 0,
        dense_fp32=batch * seq_len * hidden * 4,
    )


def compression_ratio(keep_ratio: float, bits: int, ref_bits: int = 32) -> float:
    """Payload compression ratio vs fp32 as the paper counts it (note §3.5): (32/bits)·(1/keep)."""
    return (ref_bits / bits) * (1.0 / keep_ratio)
