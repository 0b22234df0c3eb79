"""GEMM and memory-bound kernel times of one GPU, by either of two compute models.

``compute = "fitted"`` (the cost model's default, :class:`Device`): a roofline with a
shape-dependent GEMM efficiency whose constants are fitted on published Megatron-LM runs (A100)
and on H100 measurements, validated in ``docs/reproductions/llm.md``:

    t_gemm = launch + max(FLOPs / (peak · gemm · d / (d + half_dim)),  bytes / (HBM · memory))
    t_mem  = launch + bytes / (HBM · memory)                            (element-wise kernels)

``d`` is the GEMM's smallest dimension (min of M, N, K): thin GEMMs (few tokens, a narrow
tensor-parallel shard, the head dimension of attention) fall below the ceiling. ``bytes`` of a
GEMM are its operands and result once (2 bytes per bf16/fp16 element). A GEMM's backward (input
and weight gradients) has the same three dimensions, so it takes twice the forward.

``compute = "shared"`` (:class:`SharedDevice`): the project's shared compute model,
:func:`optmap.compute.compute_time`, with the accelerator's measured calibration (its
``[attrs.calibration]``, e.g. the ``h100-sxm`` and ``a100-sxm`` presets): GEMMs are its ``gemm``
op (the backward priced by its own backward ceiling), element-wise kernels its ``memory`` op.

All arguments broadcast (numpy), so a whole population of plans is priced in one call.

Calibrations (:data:`EFFICIENCY`), each named and sourced:

* ``h100``: ``gemm`` = 774.2 / 989.4 (measured bf16 8192³ GEMM ceiling over the datasheet peak,
  ``shared/measurements/h100-sxm/ceilings.json``), ``memory`` = 2,980 / 3,350 GB/s (measured 1 GiB
  device copy over the datasheet HBM3 rate), ``half_dim`` = 200 and ``launch`` = 15 µs fitted on
  the Megatron GEMM shards of hidden 2048 and 8192 (``gemm-shards.json``) and checked on the
  held-out hidden 4096 and 12288 shards: mean error 7.4 %, worst 22 % (a small launch-bound shard).
* ``a100``: ``half_dim`` is the H100's scaled by the two GPUs' ridge points (datasheet peak FLOP/s
  over HBM bytes/s: 312 T / 2,039 G = 153 against 989.4 T / 3,350 G = 295 FLOP per byte), on the
  reading that a thin GEMM loses to its operand traffic, which costs relatively less on the
  A100: 200 × 153 / 295 = 104 (an assumption: no A100 GEMMs were measured); ``launch`` is the
  H100's (host-side); ``gemm`` and ``memory`` are fitted on published Megatron-LM iteration times
  on DGX A100 clusters of three sources at once (:mod:`optmap.plugins.llm.calibration`, held-out
  errors by source in ``docs/reproductions/llm.md``), never on one run.
* an accelerator whose preset carries measured kernel ceilings (``[attrs.kernels]``, what ``optmap
  calibrate`` writes: :mod:`optmap.compute.kernels`): derived as the ``h100`` ones were, ``gemm`` = its
  measured ``gemm_tflops`` over its peak in that dtype, ``memory`` = its calibration's measured copy
  over its HBM rate (1 without a calibration), ``half_dim`` the H100's scaled by the two measured
  ridge points, GEMM ceiling over copy (the ``a100`` rule on measured figures: 774.2 T / 2,980 G for
  the H100), and ``launch`` the H100's (:func:`measured_efficiency`). Its FP8 GEMM
  ceiling, where measured, is the default ``fp8_gemm_efficiency`` (over its FP8 peak), and its fused
  attention rates the default ``attention_tflops`` (:func:`attention_rates`);
* any other accelerator: the ``a100`` ``gemm`` and ``memory`` fractions and the H100's ``launch`` (an
  assumption, reported by the cost model: ``calibrated_accelerator`` false), and ``half_dim`` by the
  ``a100`` rule from its own datasheet ridge point (:func:`ridge_half_dim`): B200 2,250 T / 8,000 G =
  281 FLOP per byte, 190; GB200 2,500 T / 8,000 G = 312, 212 (the A100's 104 is the rule at its own
  ridge of 153, not a constant of unmeasured GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from optmap.compute.kernels import kernels_of
from optmap.errors import OptmapError
from optmap.system import Accelerator


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of an accelerator's datasheet rates, and its kernel launch overhead."""

    gemm: float  # large-GEMM throughput / datasheet peak
    memory: float  # memory-bound kernel bandwidth / datasheet HBM bandwidth
    half_dim: float  # smallest GEMM dimension at which GEMM efficiency is half of ``gemm``
    launch: float  # seconds per kernel


H100_GEMM, H100_COPY = 774.2e12, 2980.0e9  # measured bf16 8192³ GEMM FLOP/s and 1 GiB copy B/s (shared/measurements)
H100_FIT = Efficiency(gemm=H100_GEMM / 989.4e12, memory=H100_COPY / 3350e9, half_dim=200.0, launch=15e-6)
H100_RIDGE = 989.4e12 / 3350e9  # datasheet bf16 FLOP per HBM byte of the H100 SXM


def ridge_half_dim(peak_flops: float, memory_bandwidth: float, h100_ridge: float = H100_RIDGE) -> float:
    """``half_dim`` of a GPU: the H100's scaled by the two ridge points (FLOP/s over HBM B/s), the
    reading of the ``a100`` calibration (module docstring): datasheet figures by default, or a measured
    GEMM ceiling and copy against the H100's measured ones (``h100_ridge = H100_GEMM / H100_COPY``)."""
    return H100_FIT.half_dim * (peak_flops / memory_bandwidth) / h100_ridge


# gemm and memory fitted by ``python examples/calibrate_llm.py`` (:mod:`.calibration`); rerun to refit.
A100_FIT = Efficiency(gemm=0.76, memory=0.80, half_dim=round(ridge_half_dim(312e12, 2039e9)), launch=H100_FIT.launch)

EFFICIENCY: dict[str, Efficiency] = {"h100": H100_FIT, "h100-sxm": H100_FIT, "a100": A100_FIT, "a100-sxm": A100_FIT}


def efficiency_for(acc: Accelerator, peak_flops: float) -> tuple[Efficiency, bool]:
    """The calibration of an accelerator whose 16-bit GEMMs peak at ``peak_flops``, and whether it is
    its own (False: the A100 fractions, ``half_dim`` by its ridge point, :func:`ridge_half_dim`)."""
    if acc.name in EFFICIENCY:
        return EFFICIENCY[acc.name], True
    measured = measured_efficiency(acc)
    if measured is not None:
        return measured, True
    return replace(A100_FIT, half_dim=ridge_half_dim(peak_flops, acc.memory_bandwidth)), False


def measured_efficiency(acc: Accelerator) -> Efficiency | None:
    """The fitted device of an accelerator from its measured kernel ceilings (module docstring), or None."""
    kernels = kernels_of(acc)
    if "gemm_tflops" not in kernels:
        return None
    from optmap.compute import calibration_of

    peak = acc.flops_per_s(kernels["dtype"])
    calibration = calibration_of(acc)
    copy = acc.memory_bandwidth if calibration is None else calibration.copy_bandwidth
    gemm = kernels["gemm_tflops"] * 1e12
    return Efficiency(gemm=min(1.0, gemm / peak), memory=min(1.0, copy / acc.memory_bandwidth),
                      half_dim=ridge_half_dim(gemm, copy, H100_GEMM / H100_COPY), launch=H100_FIT.launch)


def attention_rates(acc: Accelerator, attention: str, given: tuple[float, float] | None) -> tuple[float, float] | None:
    """Cost option ``attention_tflops``: as given, else the accelerator's measured fused-attention
    rates for the fused core (``attention = "flash"``), else None (priced as GEMMs, :mod:`.attention`)."""
    if given is not None or attention != "flash":
        return given
    rates = kernels_of(acc).get("attention_tflops")
    return None if rates is None else (float(rates[0]), float(rates[1]))


@dataclass(frozen=True)
class Device:
    """The fitted roofline (``compute = "fitted"``): peak FLOP/s, HBM B/s, efficiencies."""

    peak_flops: float
    memory_bandwidth: float
    eff: Efficiency
    operand_bytes: float = 2.0  # bytes per GEMM operand element (16-bit; 1 for FP8, :mod:`.precision`)

    def gemm_time(self, m, n, k, batch=1.0):
        """Seconds of ``batch`` independent (m × k) · (k × n) products (one batched kernel)."""
        m, n, k, batch = (np.asarray(x, dtype=float) for x in (m, n, k, batch))
        flops = 2.0 * m * n * k * batch
        d = np.minimum(np.minimum(m, n), k)
        rate = self.peak_flops * self.eff.gemm * d / (d + self.eff.half_dim)  # roofline ceiling × shape
        traffic = (self.operand_bytes * (m * k + k * n) + 2.0 * m * n) * batch  # 16-bit result
        return self.eff.launch + np.maximum(flops / rate, traffic / (self.memory_bandwidth * self.eff.memory))

    def gemm_times(self, m, n, k, batch=1.0):
        """(forward, backward) seconds of a GEMM: backward = input + weight gradients = 2 × forward."""
        forward = self.gemm_time(m, n, k, batch)
        return forward, 2.0 * forward

    def memory_time(self, nbytes, kernels=1.0):
        """Seconds of memory-bound kernels moving ``nbytes`` in all (``kernels`` launches)."""
        nbytes = np.asarray(nbytes, dtype=float)
        return kernels * self.eff.launch + nbytes / (self.memory_bandwidth * self.eff.memory)


@dataclass(frozen=True)
class SharedDevice:
    """The shared compute model (``compute = "shared"``) with the accelerator's calibration."""

    accelerator: Accelerator
    dtype: str

    def gemm_times(self, m, n, k, batch=1.0):
        """(forward, backward) seconds of ``batch`` (m × k) · (k × n) products (its ``gemm`` op)."""
        from optmap.compute import compute_time

        shape = {"m": m, "n": n, "k": k, "count": batch}
        return (compute_time(self.accelerator, "gemm", shape, dtype=self.dtype, passes="forward"),
                compute_time(self.accelerator, "gemm", shape, dtype=self.dtype, passes="backward"))

    def memory_time(self, nbytes, kernels=1.0):
        """Seconds of memory-bound kernels moving ``nbytes`` in all (its ``memory`` op)."""
        from optmap.compute import compute_time

        return compute_time(self.accelerator, "memory", {"bytes": nbytes, "kernels": kernels}, dtype=self.dtype)


def devices(acc: Accelerator, rec, dtype: str, compute: str, gemm_efficiency: float | None = None,
            memory_efficiency: float | None = None, fp8_gemm_efficiency: float | None = None):
    """``(device, linear_device, calibrated)`` of the ``megatron-3d`` option ``compute`` for one
    accelerator and precision recipe ``rec`` (:mod:`.precision`): the 16-bit device, the device of
    the linear GEMMs (None: the 16-bit one; FP8 recipes: the FP8 peak at ``fp8_gemm_efficiency``, by
    default the 16-bit fraction) and whether the accelerator has its own calibration."""
    if compute == "shared":
        from optmap.compute import calibration_of

        if calibration_of(acc) is None:
            raise OptmapError(f"[cost] compute = \"shared\" prices GEMMs by the accelerator's measured "
                              f"calibration, which '{acc.name}' lacks; use a measured preset (a100-sxm, "
                              f"h100-sxm) or compute = \"fitted\"")
        if gemm_efficiency or memory_efficiency or fp8_gemm_efficiency:
            raise OptmapError("[cost] gemm_efficiency, memory_efficiency and fp8_gemm_efficiency apply to "
                              "compute = \"fitted\" only")
        if rec.low_precision:
            raise OptmapError(f"[cost] compute = \"shared\" is calibrated on 16-bit GEMMs only; with dtype = "
                              f"\"{rec.name}\" use compute = \"fitted\"")
        return SharedDevice(acc, dtype), None, True
    peak16 = acc.flops_per_s("bf16" if rec.low_precision else dtype)
    eff, calibrated = efficiency_for(acc, peak16)
    eff = Efficiency(gemm=gemm_efficiency or eff.gemm, memory=memory_efficiency or eff.memory,
                     half_dim=eff.half_dim, launch=eff.launch)
    device = Device(peak16, acc.memory_bandwidth, eff)
    if not rec.low_precision:
        return device, None, calibrated
    peak = acc.flops_per_s(rec.linear_dtype)
    measured = kernels_of(acc).get("fp8_gemm_tflops") if rec.linear_dtype == "fp8" else None
    fp8_gemm_efficiency = fp8_gemm_efficiency or (measured and min(1.0, measured * 1e12 / peak))
    linear = Device(peak, acc.memory_bandwidth,
                    Efficiency(gemm=fp8_gemm_efficiency or eff.gemm, memory=eff.memory, half_dim=eff.half_dim,
                               launch=eff.launch), operand_bytes=rec.operand_bytes)
    return device, linear, calibrated
