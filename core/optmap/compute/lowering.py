"""Operations lowered to the kernels that run them, as work and traffic terms the model prices.

A contraction pass is a GEMM-like kernel: an ``m x n`` output reduced over ``k``. Each kernel is
described by arrays (any shapes that broadcast together):

* ``flops`` — 2 x multiply-accumulates;
* ``gathered`` — bytes of the operand streamed tile by tile through on-chip memory (the
  implicit im2col matrix of a convolution: ``m x k``; for a GEMM, its ``m x k`` input);
* ``moved`` — bytes read from and written to device memory (inputs once, output once);
* ``written`` — bytes of the output (the epilogue);
* ``backward`` — whether the kernel belongs to the backward pass (its own ceiling).

Convolutions (and linear layers, which are 1x1 convolutions over ``batch`` rows) lower to three
passes, as cuDNN runs them (implicit GEMM, channels-last):

=============== ================== ================= ========================
pass            m                  n                 k
=============== ================== ================= ========================
forward         batch · HoWo       cout              cin · kh·kw
backward_data   batch · HiWi       cin               cout · kh·kw · HoWo/HiWi
weight_grad     cout               cin · kh·kw       batch · HoWo
=============== ================== ================= ========================

(``HoWo/HiWi`` keeps the backward-data MACs equal to the forward's for strided convolutions.)
Shapes may be fractional: a shard of a layer split across devices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from optmap.errors import OptmapError, did_you_mean

PASSES = ("forward", "backward_data", "weight_grad")
PASS_SETS = {"forward": ("forward",), "inference": ("forward",), "training": PASSES,
             "backward": ("backward_data", "weight_grad")}


@dataclass(frozen=True)
class Kernel:
    """Work (FLOPs) and traffic (bytes) of one kernel; arrays broadcast together."""

    flops: Any
    gathered: Any
    moved: Any
    written: Any
    backward: bool = False
    unaligned: Any = False  # the layer's channels miss the tensor-core alignment
    launches: Any = 1  # kernels this entry stands for (memory-bound work split into several)
    gathers_input: bool = True  # the gathered operand is the layer's input (its channels' alignment)


def passes_of(passes: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``"training"`` → all three passes; a pass name or a sequence of them as given."""
    if isinstance(passes, str):
        if passes in PASS_SETS:
            return PASS_SETS[passes]
        passes = (passes,)
    out = tuple(passes)
    for name in out:
        if name not in PASSES:
            raise OptmapError(f"compute: unknown pass '{name}'{did_you_mean(str(name), PASSES + tuple(PASS_SETS))}")
    return out


def _get(shape: Mapping[str, Any], key: str, op: str, default: Any = None):
    if key in shape:
        return np.asarray(shape[key], float)
    if default is None:
        raise OptmapError(f"compute: op '{op}' needs shape key '{key}'; got {', '.join(sorted(shape)) or 'none'}")
    return np.asarray(default, float)


def _contraction(m, n, k, gathered, moved, backward: bool, unaligned, size: float, gathers_input=True) -> Kernel:
    return Kernel(2.0 * m * n * k, gathered * size, moved * size, m * n * size, backward, unaligned, 1, gathers_input)


def lower_conv2d(shape: Mapping[str, Any], passes: tuple[str, ...], align: int, size: float) -> list[Kernel]:
    """Keys: batch, cin, cout, in_hw (Hi·Wi), out_hw (Ho·Wo), kernel (kh·kw); optional ``aligned``.

    ``aligned`` (default: ``cin`` is a multiple of ``align``) tells whether the layer runs on the
    fast contraction kernels. A caller pricing a shard of a layer passes the whole layer's value,
    so a shard runs the kernels its layer runs.
    """
    batch, cin, cout = (_get(shape, key, "conv2d") for key in ("batch", "cin", "cout"))
    in_hw, out_hw = _get(shape, "in_hw", "conv2d", 1), _get(shape, "out_hw", "conv2d", 1)
    kk = _get(shape, "kernel", "conv2d", 1)
    aligned = shape.get("aligned")
    unaligned = np.mod(cin, align) != 0 if aligned is None else ~np.asarray(aligned, bool)
    x, w, y = batch * cin * in_hw, cin * kk * cout, batch * cout * out_hw  # input, weights, output
    x_read = batch * cin * np.minimum(in_hw, out_hw * kk)  # a strided 1x1 conv reads only the pixels it samples
    kernels = []
    for name in passes:
        if name == "forward":
            m, n, k = batch * out_hw, cout, cin * kk
            kernels.append(_contraction(m, n, k, m * k, x_read + w + y, False, unaligned, size))
        elif name == "backward_data":
            m, n, k = batch * in_hw, cin, cout * kk * out_hw / in_hw
            kernels.append(_contraction(m, n, k, m * k, y + w + x, True, unaligned, size, False))  # gathers dy
        else:  # weight_grad: reduce over the batch and output pixels
            m, n, k = cout, cin * kk, batch * out_hw
            kernels.append(_contraction(m, n, k, k * n, y + x_read + w, True, unaligned, size))
    return kernels


def lower_linear(shape: Mapping[str, Any], passes: tuple[str, ...], align: int, size: float) -> list[Kernel]:
    """Keys: batch (rows: samples x tokens), cin, cout; a 1x1 convolution over ``batch`` rows."""
    return lower_conv2d({**shape, "in_hw": 1, "out_hw": 1, "kernel": 1}, passes, align, size)


def lower_gemm(shape: Mapping[str, Any], passes: tuple[str, ...], align: int, size: float) -> list[Kernel]:
    """Keys: m, n, k (``y[m, n] = x[m, k] · w[k, n]``, ``w`` a weight); ``count`` batches of them."""
    m, n, k = (_get(shape, key, "gemm") for key in ("m", "n", "k"))
    count = _get(shape, "count", "gemm", 1)
    kernels = lower_linear({"batch": m, "cin": k, "cout": n, "aligned": shape.get("aligned", True)}, passes, align, size)
    return [Kernel(q.flops * count, q.gathered * count, q.moved * count, q.written * count, q.backward, q.unaligned,
                   1, q.gathers_input) for q in kernels]


def lower_attention(shape: Mapping[str, Any], passes: tuple[str, ...], align: int, size: float) -> list[Kernel]:
    """Fused (flash) attention. Keys: batch, heads, seq, head_dim; optional ``seq_kv``, ``causal``.

    Forward: the two products Q·Kᵀ and P·V, 4·batch·heads·seq·seq_kv·head_dim FLOPs, halved when
    causal (masked blocks are skipped); it reads Q, K, V and writes O. Backward (as
    ``backward_data``; attention has no weights): five products, 2.5 x the forward FLOPs, reading
    Q, K, V, O, dO and writing dQ, dK, dV (FlashAttention-2, Dao 2023, Algorithm 2).
    """
    batch, heads, seq, dim = (_get(shape, key, "attention") for key in ("batch", "heads", "seq", "head_dim"))
    seq_kv = _get(shape, "seq_kv", "attention", seq)
    causal = 0.5 if shape.get("causal", False) else 1.0
    flops = 4.0 * batch * heads * seq * seq_kv * dim * causal
    q, kv = batch * heads * seq * dim * size, batch * heads * seq_kv * dim * size
    kernels = []
    if "forward" in passes:
        kernels.append(Kernel(flops, 0.0, 2 * q + 2 * kv, q, False, False))
    if "backward_data" in passes:
        kernels.append(Kernel(2.5 * flops, 0.0, 4 * q + 4 * kv, q + 2 * kv, True, False))
    return kernels


def lower_memory(shape: Mapping[str, Any], passes: tuple[str, ...], align: int, size: float) -> list[Kernel]:
    """Memory-bound work. Keys: ``bytes`` read + written, optional ``kernels`` (default 1).

    The caller counts the bytes of every pass it prices (``passes`` is not consulted)."""
    total = _get(shape, "bytes", "memory")
    count = _get(shape, "kernels", "memory", 1)
    if np.any(count < 0):
        raise OptmapError("compute: op 'memory' needs kernels >= 0")
    return [Kernel(0.0, 0.0, total, 0.0, False, False, count)]


LOWERINGS = {
    "conv2d": lower_conv2d,
    "linear": lower_linear,
    "gemm": lower_gemm,
    "matmul": lower_gemm,
    "attention": lower_attention,
    "memory": lower_memory,
}


def lower(op: str, shape: Mapping[str, Any], passes, align: int = 8, element_bytes: float = 2) -> list[Kernel]:
    """The kernels that run ``op`` of ``shape`` for ``passes``, tensors of ``element_bytes`` each."""
    if op not in LOWERINGS:
        raise OptmapError(f"compute: unknown op '{op}'{did_you_mean(str(op), LOWERINGS)}")
    if not isinstance(shape, Mapping):
        raise OptmapError(f"compute: the shape of op '{op}' must be a mapping of named sizes, got {shape!r}")
    return LOWERINGS[op](shape, passes_of(passes), align, element_bytes)
