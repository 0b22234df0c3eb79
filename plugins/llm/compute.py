"""GEMM and memory-bound kernel times: a roofline with a shape-dependent GEMM efficiency.

This is the plugin's one compute model (all of it is here, so that moving to the shared
``optmap.compute`` of issue 15 touches one module):

    t_gemm = launch + max(FLOPs / (peak · gemm · d / (d + half_dim)),  bytes / (HBM · memory))
    t_mem  = launch + bytes / (HBM · memory)                            (element-wise kernels)

``d`` is the GEMM's smallest dimension (min of M, N, K): thin GEMMs (few tokens, a narrow
tensor-parallel shard, the head dimension of attention) fall below the ceiling. ``bytes`` of a
GEMM are its operands and result once (2 bytes per bf16/fp16 element). All arguments broadcast
(numpy), so a whole population of plans is priced in one call.

Calibrations (:data:`EFFICIENCY`), each named and sourced:

* ``h100``: ``gemm`` = 774.2 / 989.4 (measured bf16 8192³ GEMM ceiling over the datasheet peak,
  ``shared/measurements/h100-sxm/ceilings.json``), ``memory`` = 2,980 / 3,350 GB/s (measured 1 GiB
  device copy over the datasheet HBM3 rate), ``half_dim`` = 200 and ``launch`` = 15 µs fitted on
  the Megatron GEMM shards of hidden 2048 and 8192 (``gemm-shards.json``) and checked on the
  held-out hidden 4096 and 12288 shards: mean error 7.4 %, worst 22 % (a small launch-bound shard).
* ``a100``: ``half_dim`` and ``launch`` carried over from the H100 fit (same GEMM shapes, an
  assumption); ``gemm`` and ``memory`` fitted on published Megatron-LM iteration times on DGX A100
  clusters (:mod:`optmap.plugins.llm.calibration`, ``docs/reproductions/llm.md``), never on one run.
* any other accelerator: the ``a100`` fractions (an assumption, reported by the cost model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of an accelerator's datasheet rates, and its kernel launch overhead."""

    gemm: float  # large-GEMM throughput / datasheet peak
    memory: float  # memory-bound kernel bandwidth / datasheet HBM bandwidth
    half_dim: float  # smallest GEMM dimension at which GEMM efficiency is half of ``gemm``
    launch: float  # seconds per kernel


H100_FIT = Efficiency(gemm=774.2 / 989.4, memory=2980.0 / 3350.0, half_dim=200.0, launch=15e-6)
# Fitted by ``python -m optmap.plugins.llm.calibration`` (see its docstring); rerun it to refit.
A100_FIT = Efficiency(gemm=0.81, memory=0.80, half_dim=H100_FIT.half_dim, launch=H100_FIT.launch)

EFFICIENCY: dict[str, Efficiency] = {"h100": H100_FIT, "a100": A100_FIT}


def efficiency_for(accelerator_name: str) -> tuple[Efficiency, bool]:
    """The calibration of an accelerator and whether it is its own (False: the A100 fallback)."""
    if accelerator_name in EFFICIENCY:
        return EFFICIENCY[accelerator_name], True
    return A100_FIT, False


@dataclass(frozen=True)
class Device:
    """What the compute model needs of one accelerator: peak FLOP/s, HBM B/s, efficiencies."""

    peak_flops: float
    memory_bandwidth: float
    eff: Efficiency

    def gemm_time(self, m, n, k, batch=1.0, bytes_per_element: float = 2.0):
        """Seconds of ``batch`` independent (m × k) · (k × n) products (one batched kernel)."""
        m, n, k, batch = (np.asarray(x, dtype=float) for x in (m, n, k, batch))
        flops = 2.0 * m * n * k * batch
        d = np.minimum(np.minimum(m, n), k)
        rate = self.peak_flops * self.eff.gemm * d / (d + self.eff.half_dim)  # roofline ceiling × shape
        traffic = bytes_per_element * (m * k + k * n + m * n) * batch
        return self.eff.launch + np.maximum(flops / rate, traffic / (self.memory_bandwidth * self.eff.memory))

    def memory_time(self, nbytes, kernels=1.0):
        """Seconds of memory-bound kernels moving ``nbytes`` in all (``kernels`` launches)."""
        nbytes = np.asarray(nbytes, dtype=float)
        return kernels * self.eff.launch + nbytes / (self.memory_bandwidth * self.eff.memory)
