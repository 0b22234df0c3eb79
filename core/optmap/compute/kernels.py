"""Measured kernel ceilings an accelerator preset may carry in ``[attrs.kernels]``.

``optmap calibrate`` times, beside the families it fits (:mod:`optmap.compute.fit`), the kernels a
cost model prices apart from its GEMM curve, and writes their rates here::

    [attrs.kernels]
    dtype = "bf16"                        # the calibration's dtype, which gemm_tflops and attention ran in
    gemm_tflops = 774.2                   # an n³ GEMM (n = 8192) in that dtype
    fp8_gemm_tflops = 1320.0              # the same GEMM in FP8 (E4M3, per-tensor scales), where the GPU has it
    attention_tflops = [619.0, 541.0]     # fused causal attention, forward and backward (FLOPs over seconds)
    attention_kernel = "cudnn"            # which fused kernel ran them

Every entry but ``dtype`` is optional. A cost model reads them with :func:`kernels_of`, which checks
the table once (one line naming what is wrong); the core prices nothing with them itself.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from optmap.errors import OptmapError

RATES = ("gemm_tflops", "fp8_gemm_tflops")  # TFLOP/s, one number each
KEYS = ("dtype", *RATES, "attention_tflops", "attention_kernel")


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def check_kernels(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``table`` as :data:`KEYS` describes it, or one line naming the first wrong entry."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise OptmapError(f"{where}: [attrs.kernels] has unknown key '{unknown[0]}'; valid keys: {', '.join(KEYS)}")
    if not isinstance(table.get("dtype"), str):
        raise OptmapError(f"{where}: [attrs.kernels] needs dtype, the dtype its rates ran in (e.g. \"bf16\")")
    for key in RATES:
        if key in table and not _positive(table[key]):
            raise OptmapError(f"{where}: [attrs.kernels] {key} must be a rate > 0 in TFLOP/s, got {table[key]!r}")
    rates = table.get("attention_tflops")
    if rates is not None and not (isinstance(rates, (list, tuple)) and len(rates) == 2 and all(map(_positive, rates))):
        raise OptmapError(f"{where}: [attrs.kernels] attention_tflops must be [forward, backward] rates > 0 in "
                          f"TFLOP/s, got {rates!r}")
    if "attention_kernel" in table and not isinstance(table["attention_kernel"], str):
        raise OptmapError(f"{where}: [attrs.kernels] attention_kernel must be a name, got {table['attention_kernel']!r}")
    return dict(table)


def kernels_of(accelerator, where: str | None = None) -> dict[str, Any]:
    """The accelerator's measured kernel ceilings (``attrs["kernels"]``), checked (an error names
    ``where``, by default the accelerator); empty without them."""
    table = accelerator.attrs.get("kernels")
    return {} if table is None else check_kernels(table, where or f"accelerator '{accelerator.name}'")
